//! `delayq completions SHELL` and `delayq man`: generated from the command line's definition.

use crate::cli::Cli;
use clap::CommandFactory;

pub(crate) fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    clap_complete::generate(shell, &mut Cli::command(), "delayq", &mut std::io::stdout());
    Ok(())
}

pub(crate) fn man() -> anyhow::Result<()> {
    clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout())?;
    Ok(())
}
