//! Sending: `lettre` over SMTP, asynchronously on tokio, TLS by rustls.

use crate::message::Email;
use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long one SMTP conversation may take before it counts as failed.
const SMTP_TIMEOUT: Duration = Duration::from_secs(30);

/// How the connection to the SMTP server is protected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tls {
    /// Plain connection upgraded by STARTTLS, required (port 587).
    #[default]
    Starttls,
    /// TLS from the first byte (port 465).
    Tls,
    /// No TLS at all: for an SMTP server on loopback only (tests, a local
    /// relay); the configuration refuses it for any other host.
    None,
}

/// Where and as whom to send.
#[derive(Clone)]
pub struct Smtp {
    pub host: String,
    pub port: u16,
    pub tls: Tls,
    /// User and password, when the server asks for a login.
    pub login: Option<(String, String)>,
    /// The sender (`plangate <plangate@example.com>`).
    pub from: String,
}

impl std::fmt::Debug for Smtp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Smtp")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("login", &self.login.as_ref().map(|(user, _)| (user, "********")))
            .field("from", &self.from)
            .finish()
    }
}

/// Why an email was not sent (or a setting is wrong).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MailError(String);

/// Whether `address` is an address (`a@b.example`) or a mailbox
/// (`Name <a@b.example>`); the reason when it is not.
pub fn check_address(address: &str) -> Result<(), String> {
    address.parse::<Mailbox>().map(|_| ()).map_err(|e| e.to_string())
}

/// The SMTP sender. Holds no connection between sends.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl Mailer {
    /// A sender for `smtp`; connects only when it sends.
    pub fn new(smtp: &Smtp) -> Result<Mailer, MailError> {
        let from = smtp.from.parse::<Mailbox>().map_err(|e| MailError(format!("the sender {:?} is not an address: {e}", smtp.from)))?;
        let builder = match smtp.tls {
            Tls::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&smtp.host),
            Tls::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&smtp.host),
            Tls::None => Ok(AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&smtp.host)),
        }
        .map_err(|e| MailError(format!("cannot use SMTP server {}: {e}", smtp.host)))?;
        let mut builder = builder.port(smtp.port).timeout(Some(SMTP_TIMEOUT));
        if let Some((user, password)) = &smtp.login {
            builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
        }
        Ok(Mailer { transport: builder.build(), from })
    }

    /// Send `email`: text and HTML as alternatives, the plan attached.
    pub async fn send(&self, email: &Email) -> Result<(), MailError> {
        let message = message(&self.from, email)?;
        self.transport.send(message).await.map(|_| ()).map_err(|e| MailError(format!("SMTP: {e}")))
    }
}

/// The MIME message of `email` from `from`.
fn message(from: &Mailbox, email: &Email) -> Result<Message, MailError> {
    let to = email.to.parse::<Mailbox>().map_err(|e| MailError(format!("the recipient {:?} is not an address: {e}", email.to)))?;
    let markdown = ContentType::parse("text/markdown; charset=utf-8").map_err(|e| MailError(e.to_string()))?;
    let (file_name, document) = &email.attachment;
    Message::builder()
        .from(from.clone())
        .to(to)
        .subject(email.subject.clone())
        .multipart(
            MultiPart::mixed()
                .multipart(MultiPart::alternative_plain_html(email.text.clone(), email.html.clone()))
                .singlepart(Attachment::new(file_name.clone()).body(document.clone(), markdown)),
        )
        .map_err(|e| MailError(format!("cannot build the email: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_has_both_parts_and_the_attachment() {
        let email = Email {
            to: "alice@example.com".into(),
            subject: "Plan 'x' waits".into(),
            text: "text part".into(),
            html: "<p>html part</p>".into(),
            attachment: ("plan-x-v1.md".into(), "# x".into()),
        };
        let from: Mailbox = "plangate <plangate@example.com>".parse().expect("mailbox");
        let raw = String::from_utf8(message(&from, &email).expect("built").formatted()).expect("utf-8");
        for needle in
            ["multipart/mixed", "multipart/alternative", "text/plain", "text/html", "text/markdown", "plan-x-v1.md", "alice@example.com"]
        {
            assert!(raw.contains(needle), "{needle} in {raw}");
        }
    }

    #[test]
    fn addresses_are_checked_and_the_password_never_printed() {
        assert!(check_address("a@b.example").is_ok() && check_address("A <a@b.example>").is_ok());
        assert!(check_address("not an address").is_err());
        let smtp = Smtp {
            host: "smtp.example".into(),
            port: 587,
            tls: Tls::Starttls,
            login: Some(("u".into(), "hunter2".into())),
            from: "a@b.example".into(),
        };
        assert!(!format!("{smtp:?}").contains("hunter2"));
        assert!(Mailer::new(&smtp).is_ok(), "builds without connecting");
    }
}
