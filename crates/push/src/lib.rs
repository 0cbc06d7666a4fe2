//! Web Push for the plan page (`[push]`): a signed-in approver's browser
//! subscribes a device, and each plan that waits for them reaches it as a
//! push that carries **no plan text**, only an opaque note id. The service
//! worker exchanges the id for the card over the authenticated page; the
//! push service learns only that something waits, for whom it holds a
//! subscription, and when.
//!
//! * [`vapid`]: the server's VAPID key (RFC 8292) and the ES256 JWT of
//!   each push (audience, expiry, subject).
//! * [`subscription`]: a device's subscription (endpoint, `p256dh`,
//!   `auth`), checked before it is stored, with the approver it belongs
//!   to and its expiry.
//! * [`note`]: what a push carries (`{"n": "<64 hex>"}`) and the record
//!   its id's hash points to (approval, version, approver); what a plan's
//!   notification may offer ([`note::offer`]: one-tap actions for a
//!   plan whose policy allows them, otherwise Open only).
//! * [`send`]: the request (RFC 8291 aes128gcm by `web-push-native`, RFC
//!   8030 headers, the VAPID header) and its outcome: delivered, gone
//!   (404/410: the subscription is removed), retry (429, 5xx, no answer)
//!   or refused.
//!
//! **Architecture invariant:** no store, no decision rule, no clock and no
//! randomness but in [`send`]'s HTTP call and the encryption's ephemeral
//! key and salt (which `web-push-native` draws): the server keeps the
//! records, draws the note ids and decides through the same `Core::decide`
//! as every other venue.

pub mod note;
pub mod send;
pub mod subscription;
pub mod vapid;

pub use note::{Note, Offer};
pub use send::{Outcome, Pusher};
pub use subscription::{Subscription, SubscriptionError};
pub use vapid::VapidKey;
