//! Plan cards by email (`[email]`): the card as an HTML and a text part,
//! the plan markdown attached, and per approver and per action a one-use
//! link; the pages those links open; and the SMTP sender.
//!
//! * [`token`]: a link's token (256 random bits, passed in: this crate
//!   draws none), its SHA-256 hash (the only form the store ever holds,
//!   under [`token::store_key`]) and the [`token::Link`] record the hash
//!   points to (which approval, version, approver and action).
//! * [`message`]: the email of a card ([`message::render`]): subject, text,
//!   HTML (every interpolation escaped) and the plan document.
//! * [`page`]: what a link opens. `GET /e/<token>` answers the
//!   confirmation page ([`page::confirm`]), which decides nothing (mail
//!   scanners open links); its form POSTs the token to `/e`, and only that
//!   POST decides. [`page::outcome`] is every answer after it.
//! * [`smtp`]: [`smtp::Mailer`], `lettre` over SMTP with STARTTLS, TLS or
//!   (loopback only) plain text.
//!
//! **Architecture invariant:** no decision rule and no store: the server
//! decides through the same `Core::decide` as every other venue and keeps
//! the link records; everything here but [`smtp`] is pure (random bytes,
//! URLs and time are arguments), and a token leaves this crate only inside
//! a rendered email, never in a record.

pub mod message;
pub mod page;
pub mod smtp;
pub mod token;

pub use message::{render, Email, Reason};
pub use smtp::{check_address, MailError, Mailer, Smtp, Tls};
pub use token::{Action, Link, Token};
