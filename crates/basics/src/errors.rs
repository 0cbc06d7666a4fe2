//! An error with its causes, as one line for a person or a log.
//!
//! A transport error's `Display` is often only the outermost layer ("error
//! sending request"); what helps is the chain below it ("connection
//! refused").

use std::error::Error;

/// `error` and each of its causes, outermost first, joined by ": ".
pub fn chain(error: &dyn Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

/// The innermost cause of `error` (itself when it has none).
pub fn innermost<'a>(error: &'a (dyn Error + 'static)) -> &'a (dyn Error + 'static) {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Layer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|e| e as &(dyn Error + 'static))
        }
    }

    #[test]
    fn the_chain_reads_outermost_first() {
        let e = Layer(
            "error sending request",
            Some(Box::new(Layer("client error (Connect)", Some(Box::new(Layer("Connection refused", None)))))),
        );
        assert_eq!(chain(&e), "error sending request: client error (Connect): Connection refused");
        assert_eq!(innermost(&e).to_string(), "Connection refused");
    }

    #[test]
    fn an_error_without_causes_is_itself() {
        let e = Layer("alone", None);
        assert_eq!(chain(&e), "alone");
        assert_eq!(innermost(&e).to_string(), "alone");
    }
}
