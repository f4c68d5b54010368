//! `unclaim.lua`: a consumer's claim list given back onto the target list.

use crate::redis::script::{lua_bool, script, QueueSpec};
use crate::Result;
use fred::clients::Client;

script!(UNCLAIM, "unclaim.lua", [Target, Claims, Claim]);

/// Gives back the values on `claim` when its lease ran out (or at once with `force`); returns
/// how many.
pub(crate) async fn run(
    client: &Client,
    queue: &QueueSpec,
    claim: &str,
    force: bool,
) -> Result<u64> {
    UNCLAIM
        .call(queue)
        .key(claim)
        .arg(lua_bool(force))
        .run(client)
        .await
}
