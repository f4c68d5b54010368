//! `delayq completions SHELL` and `delayq man`: generated from the command line's definition,
//! whole, then written to stdout; a reader that stops early (`| head`) is no error (see
//! [`crate::exit::is_closed_pipe`]).

use crate::cli::Cli;
use clap::CommandFactory;
use std::io::Write;

pub(crate) fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "delayq", &mut script);
    write_out(&script)
}

pub(crate) fn man() -> anyhow::Result<()> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page)?;
    write_out(&page)
}

fn write_out(text: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text)?;
    out.flush()?;
    Ok(())
}
