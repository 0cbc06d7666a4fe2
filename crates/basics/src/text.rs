//! Cutting text to a size, with "…" where anything was cut.
//!
//! Every cut counts the "…" inside the size, cuts between characters (never
//! inside one), and leaves text that fits alone. What a size counts differs
//! by platform: characters for most, UTF-16 units for Telegram.

/// What a cut text ends with.
pub const ELLIPSIS: char = '…';

/// `text` cut to at most `max` characters, the last one `…` when anything
/// was cut.
pub fn cut_chars(text: &str, max: usize) -> String {
    cut(text, max, |_| 1, |_| ())
}

/// [`cut_chars`] measured in UTF-16 code units (how Telegram counts): an
/// emoji outside the Basic Multilingual Plane takes two.
pub fn cut_utf16(text: &str, max: usize) -> String {
    cut(text, max, char::len_utf16, |_| ())
}

/// [`cut_chars`] with `tidy` run on the kept part before the `…` is added,
/// e.g. to drop a dangling escape character. `tidy` may only shorten it.
pub fn cut_chars_then(text: &str, max: usize, tidy: impl FnOnce(&mut String)) -> String {
    cut(text, max, |_| 1, tidy)
}

fn cut(text: &str, max: usize, width: impl Fn(char) -> usize, tidy: impl FnOnce(&mut String)) -> String {
    if text.chars().map(&width).sum::<usize>() <= max {
        return text.to_string();
    }
    let room = max.saturating_sub(width(ELLIPSIS));
    let (mut out, mut used) = (String::new(), 0);
    for c in text.chars() {
        if used + width(c) > room {
            break;
        }
        used += width(c);
        out.push(c);
    }
    tidy(&mut out);
    out.push(ELLIPSIS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_fits_is_left_alone() {
        assert_eq!(cut_chars("", 0), "");
        assert_eq!(cut_chars("abc", 3), "abc");
        assert_eq!(cut_chars("héllo", 5), "héllo");
        assert_eq!(cut_utf16("😀", 2), "😀");
    }

    #[test]
    fn a_cut_keeps_max_minus_one_characters_and_the_ellipsis() {
        assert_eq!(cut_chars("abcdef", 4), "abc…");
        assert_eq!(cut_chars("abcdef", 1), "…");
        assert_eq!(cut_chars("abcdef", 0), "…", "as before: a zero size still says something was cut");
        let long = cut_chars(&"é".repeat(300), 100);
        assert_eq!((long.chars().count(), long.ends_with(ELLIPSIS)), (100, true));
    }

    #[test]
    fn cuts_fall_between_characters_never_inside_one() {
        // Multi-byte characters: counted once each, never split.
        assert_eq!(cut_chars("日本語のテキスト", 4), "日本語…");
        assert_eq!(cut_chars("😀😀😀", 2), "😀…");
        // A combining mark counts as a character of its own (as `chars()` does).
        assert_eq!(cut_chars("e\u{301}e\u{301}", 3), "e\u{301}…");
    }

    #[test]
    fn utf16_counts_an_astral_character_twice() {
        assert_eq!(cut_utf16("a😀b", 3), "a…", "the emoji (2 units) and … (1) do not fit after a in 3");
        assert_eq!(cut_utf16("a😀bc", 4), "a😀…");
        assert_eq!(cut_utf16(&"x".repeat(250), 200).encode_utf16().count(), 200);
        assert_eq!(cut_utf16(&"😀".repeat(150), 200).encode_utf16().count(), 199, "an emoji does not fit in the last unit");
    }

    #[test]
    fn tidy_shortens_the_kept_part_only_when_cutting() {
        let drop_backslash = |s: &mut String| {
            if s.ends_with('\\') {
                s.pop();
            }
        };
        assert_eq!(cut_chars_then("\\*\\*", 4, drop_backslash), "\\*\\*");
        assert_eq!(cut_chars_then("\\*\\*\\*", 4, drop_backslash), "\\*…");
    }
}
