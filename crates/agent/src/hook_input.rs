//! Reading a hook event from stdin, the same way for every harness: within a
//! time budget and a size cap, so a harness that never closes stdin, or
//! sends something huge, gets a refusal instead of a hung or bloated hook.

use std::time::Duration;
use tokio::io::AsyncReadExt;

/// Hook input larger than this is refused (the API takes 1 MiB bodies).
pub const MAX_INPUT_BYTES: u64 = 4 << 20;

/// The bytes on stdin, or why they could not be read, phrased as the reason
/// the call is blocked.
pub async fn read_stdin(budget: Duration) -> Result<Vec<u8>, String> {
    let mut input = Vec::new();
    let read = tokio::time::timeout(budget, tokio::io::stdin().take(MAX_INPUT_BYTES + 1).read_to_end(&mut input)).await;
    match read {
        Err(_) => Err("plangate: the hook input did not arrive on stdin in time, so this call is blocked".to_string()),
        Ok(Err(e)) => Err(format!("plangate: cannot read the hook input ({e}), so this call is blocked")),
        Ok(Ok(_)) if input.len() as u64 > MAX_INPUT_BYTES => {
            Err(format!("plangate: the hook input is over {MAX_INPUT_BYTES} bytes, so this call is blocked"))
        }
        Ok(Ok(_)) => Ok(input),
    }
}
