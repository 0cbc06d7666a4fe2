//! The reader: commands split as a shell would, wrappers and shells followed, programs and subcommand words compared.

use super::*;

/// The rule being matched and the work left.
pub(super) struct Reader<'r> {
    /// Basename of the rule's program.
    pub(super) program: &'r str,
    /// The rule's words after the program.
    pub(super) rest: &'r [&'r str],
    pub(super) budget: usize,
    /// Speculative readings under way (see [`Reader::aside`]).
    pub(super) asides: usize,
}

/// Bits of a position reached in a simple command.
pub(super) const REACHED: u8 = 1;
/// The command runs under `xargs`: words from standard input may follow.
pub(super) const XARGS: u8 = 2;
/// `xargs -I`/`-i`/`-J`: any word may be replaced by one from standard input.
pub(super) const REPLACED: u8 = 4;

impl Reader<'_> {
    /// Take `n` units of work; false when the budget is spent (every caller
    /// then answers "may run").
    pub(super) fn spend(&mut self, n: usize) -> bool {
        match self.budget.checked_sub(n) {
            Some(left) => {
                self.budget = left;
                true
            }
            None => {
                self.budget = 0;
                false
            }
        }
    }

    /// Read `src` as code a shell runs.
    pub(super) fn code(&mut self, src: &str, q: Quoting, depth: usize) -> bool {
        depth > MAX_DEPTH || self.read(src, q, depth, true)
    }

    /// Read `src` as commands in case a shell runs it (a comment, a
    /// here-document line, an unterminated quote's text). Such a reading
    /// only widens the match, so one inside another is read only twice
    /// deep, and none past the depth limit.
    pub(super) fn aside(&mut self, src: &str, q: Quoting, depth: usize, comments: bool) -> bool {
        if depth >= MAX_DEPTH || self.asides >= MAX_ASIDES {
            return false;
        }
        self.asides += 1;
        let runs = self.read(src, q, depth + 1, comments);
        self.asides -= 1;
        runs
    }

    pub(super) fn read(&mut self, src: &str, q: Quoting, depth: usize, comments: bool) -> bool {
        let b = src.as_bytes();
        let mut stack = vec![Commands::new(End::Input)];
        let mut heredocs: VecDeque<(String, bool)> = VecDeque::new();
        let mut i = 0;
        while i < b.len() {
            if !self.spend(1) {
                return true;
            }
            let Some(top) = stack.last_mut() else { break };
            let c = b[i];
            if let Some((_, quote)) = top.quotes.last_mut() {
                // Inside a quote: only the closing character, escapes and
                // expansions mean anything.
                let in_dq = match quote {
                    Quote::Double => true,
                    Quote::Param { dq, .. } => *dq,
                };
                let step = match (quote, c) {
                    (Quote::Double, b'"') => {
                        top.quotes.pop();
                        Step::To(i + 1)
                    }
                    (Quote::Param { braces: 0, .. }, b'}') => {
                        top.cur.text.push('}');
                        top.quotes.pop();
                        Step::To(i + 1)
                    }
                    (Quote::Param { braces, .. }, b'}') => {
                        *braces -= 1;
                        top.cur.text.push('}');
                        Step::To(i + 1)
                    }
                    (Quote::Param { braces, .. }, b'{') => {
                        *braces += 1;
                        top.cur.text.push('{');
                        Step::To(i + 1)
                    }
                    (Quote::Param { dq: false, .. }, b'\'') => single_quoted(src, i + 1, &mut top.cur, q.escapes()),
                    (Quote::Param { .. }, b'"') => {
                        top.quotes.push((i, Quote::Double));
                        Step::To(i + 1)
                    }
                    (Quote::Param { .. }, b'@') => {
                        top.cur.splits = true;
                        top.cur.text.push('@');
                        Step::To(i + 1)
                    }
                    (quote, b'\\') => match b.get(i + 1) {
                        Some(b'\n') => Step::To(i + 2),
                        Some(&e) if matches!(quote, Quote::Param { .. }) || matches!(e, b'$' | b'`' | b'"' | b'\\') => {
                            let (ch, len) = char_at(src, i + 1);
                            top.cur.text.push(ch);
                            Step::To(i + 1 + len)
                        }
                        _ => {
                            top.cur.text.push('\\');
                            Step::To(i + 1)
                        }
                    },
                    (_, b'$') => dollar(src, i, &mut top.cur, &mut top.quotes, in_dq),
                    (_, b'`') => {
                        top.cur.expansion(false);
                        stack.push(Commands::new(End::Backtick));
                        Step::To(i + 1)
                    }
                    _ => {
                        let (ch, len) = char_at(src, i);
                        top.cur.text.push(ch);
                        Step::To(i + len)
                    }
                };
                match self.follow(step, &mut stack, src, q, depth, comments) {
                    Some(next) => i = next,
                    None => return true,
                }
                continue;
            }
            match c {
                b' ' | b'\t' => {
                    if top.end_word(&mut heredocs) && self.finish(top, depth) {
                        return true;
                    }
                    i += 1;
                }
                b'\n' => {
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    i += 1;
                    // Here-document bodies follow the line: each body line is
                    // read on its own (a quote in one cannot hide the next).
                    while let Some((delimiter, strip_tabs)) = heredocs.pop_front() {
                        while i < b.len() {
                            let end = src[i..].find('\n').map_or(b.len(), |k| i + k);
                            let line = &src[i..end];
                            i = (end + 1).min(b.len());
                            let bare = if strip_tabs { line.trim_start_matches('\t') } else { line };
                            if bare == delimiter {
                                break;
                            }
                            if self.aside(line, q, depth, true) {
                                return true;
                            }
                        }
                    }
                }
                b';' | b'|' => {
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    i += 1;
                }
                b'&' if b.get(i + 1) == Some(&b'>') => {
                    if top.end_word(&mut heredocs) && self.finish(top, depth) {
                        return true;
                    }
                    top.target = Some(Target::File);
                    i += if b.get(i + 2) == Some(&b'>') { 3 } else { 2 };
                }
                b'&' => {
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    i += 1;
                }
                b'(' if top.cur.started() && b.get(i + 1) == Some(&b')') => {
                    // `name()`: a function definition; its body follows.
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    i += 2;
                }
                b'(' if top.cur.started() => {
                    // zsh's `=(…)`, bash's `@(…)`: commands or patterns whose
                    // value is unknown.
                    top.cur.expansion(true);
                    stack.push(Commands::new(End::Paren));
                    i += 1;
                }
                b'(' => {
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    top.parens += 1;
                    i += 1;
                }
                b')' => {
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    if top.parens > 0 {
                        top.parens -= 1;
                    } else if top.cases == 0 && top.end == End::Paren {
                        stack.pop();
                    }
                    i += 1;
                }
                b'`' if top.end == End::Backtick => {
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    stack.pop();
                    i += 1;
                }
                b'`' => {
                    top.cur.expansion(true);
                    stack.push(Commands::new(End::Backtick));
                    i += 1;
                }
                b'<' | b'>' if b.get(i + 1) == Some(&b'(') => {
                    // Process substitution: a file name, and commands.
                    top.cur.expansion(false);
                    stack.push(Commands::new(End::Paren));
                    i += 2;
                }
                b'<' | b'>' => {
                    let fd =
                        !top.cur.quoted && !top.cur.dynamic && !top.cur.text.is_empty() && top.cur.text.bytes().all(|d| d.is_ascii_digit());
                    if fd {
                        top.cur = Word::default();
                    } else if top.end_word(&mut heredocs) && self.finish(top, depth) {
                        return true;
                    }
                    let rest = &b[i..];
                    let (len, target) = if rest.starts_with(b"<<<") {
                        (3, Target::File)
                    } else if rest.starts_with(b"<<-") {
                        (3, Target::Heredoc { strip_tabs: true })
                    } else if rest.starts_with(b"<<") {
                        (2, Target::Heredoc { strip_tabs: false })
                    } else if rest.len() > 1 && matches!(rest[1], b'&' | b'>' | b'|') || rest.starts_with(b"<>") {
                        (2, Target::File)
                    } else {
                        (1, Target::File)
                    };
                    top.target = Some(target);
                    i += len;
                }
                b'\'' => {
                    let step = single_quoted(src, i + 1, &mut top.cur, q.escapes());
                    match self.follow(step, &mut stack, src, q, depth, comments) {
                        Some(next) => i = next,
                        None => return true,
                    }
                }
                b'"' => {
                    top.cur.quoted = true;
                    top.quotes.push((i, Quote::Double));
                    i += 1;
                }
                b'\\' => match b.get(i + 1) {
                    Some(b'\n') => i += 2,
                    Some(b'`') if top.end == End::Backtick => {
                        // A backtick nested in backticks: more commands.
                        if self.end_command(top, &mut heredocs, depth) {
                            return true;
                        }
                        i += 2;
                    }
                    Some(_) => {
                        let (ch, len) = char_at(src, i + 1);
                        top.cur.text.push(ch);
                        top.cur.quoted = true;
                        i += 1 + len;
                    }
                    None => {
                        top.cur.text.push('\\');
                        i += 1;
                    }
                },
                b'$' => {
                    let step = dollar(src, i, &mut top.cur, &mut top.quotes, false);
                    match self.follow(step, &mut stack, src, q, depth, comments) {
                        Some(next) => i = next,
                        None => return true,
                    }
                }
                b'#' if comments && !top.cur.started() => {
                    // A comment, for shells that read one here. Read its
                    // text as commands too (without comments), for the
                    // shells that do not.
                    let end = src[i..].find('\n').map_or(b.len(), |k| i + k);
                    if self.aside(&src[i + 1..end], q, depth, false) {
                        return true;
                    }
                    i = end;
                }
                b'*' | b'?' | b'[' | b']' | b'{' | b'}' | b',' => {
                    top.cur.syntax(c as char);
                    i += 1;
                }
                _ => {
                    let (ch, len) = char_at(src, i);
                    top.cur.text.push(ch);
                    i += len;
                }
            }
        }
        // The end: a quote left open is read from its opening as commands
        // too; then every list still open ends.
        let open_quote = stack.iter().find_map(|c| c.quotes.first().map(|(at, _)| *at));
        if let Some(at) = open_quote {
            if self.aside(src.get(at + 1..).unwrap_or(""), q, depth, comments) {
                return true;
            }
        }
        while let Some(mut top) = stack.pop() {
            if self.end_command(&mut top, &mut heredocs, depth) {
                return true;
            }
        }
        false
    }

    /// Where reading goes on after `step` (in the list a `$(` opens);
    /// `None` when an open quote's text may run the rule's command.
    pub(super) fn follow(
        &mut self,
        step: Step,
        stack: &mut Vec<Commands>,
        src: &str,
        q: Quoting,
        depth: usize,
        comments: bool,
    ) -> Option<usize> {
        match step {
            Step::To(next) => Some(next),
            Step::Subst(next) => {
                stack.push(Commands::new(End::Paren));
                Some(next)
            }
            Step::Tail(start) => (!self.aside(src.get(start..).unwrap_or(""), q, depth, comments)).then_some(src.len()),
        }
    }

    /// End the current word and the simple command.
    pub(super) fn end_command(&mut self, top: &mut Commands, heredocs: &mut VecDeque<(String, bool)>, depth: usize) -> bool {
        top.end_word(heredocs);
        self.finish(top, depth)
    }

    /// Judge the simple command read so far and start the next.
    pub(super) fn finish(&mut self, top: &mut Commands, depth: usize) -> bool {
        top.target = None;
        let words = std::mem::take(&mut top.words);
        !words.is_empty() && self.command(&words, depth)
    }

    /// Whether the simple command `words` may run the rule's command.
    pub(super) fn command(&mut self, words: &[Word], depth: usize) -> bool {
        if !self.spend(words.len()) {
            return true;
        }
        let expanded;
        let words = if words.iter().any(|w| w.braces) {
            match self.expand_braces(words) {
                Some(w) => {
                    expanded = w;
                    &expanded[..]
                }
                None => return true,
            }
        } else {
            words
        };
        let n = words.len();
        let mut reach = vec![0u8; n + 1];
        reach[0] = REACHED;
        let mut exec_read = false;
        for p in 0..n {
            let via = reach[p];
            if via == 0 {
                continue;
            }
            if !self.spend(1) {
                return true;
            }
            let w = &words[p];
            if w.dynamic || via & REPLACED != 0 {
                return true;
            }
            let name = Name::of(w);
            let program = self.program;
            if self.named(&name, program) && self.args(words, p + 1, via) {
                return true;
            }
            // What else the word can be: then the program comes later.
            let mut next: Vec<(usize, u8)> = Vec::new();
            if is_assignment(&w.text) || KEYWORDS.contains(&w.text.as_str()) {
                next.push((p + 1, via));
            }
            for spec in WRAPPERS {
                if !spec.names.iter().any(|n| self.named(&name, n)) {
                    continue;
                }
                let mut starts = Vec::new();
                let mut flags = via;
                if spec.stdin_words {
                    flags |= XARGS;
                }
                if self.wrapper(spec, words, p, depth, &mut starts, &mut flags) {
                    return true;
                }
                next.extend(starts.into_iter().map(|s| (s, flags)));
            }
            let fish = self.named(&name, "fish");
            if SHELLS.iter().any(|n| self.named(&name, n)) && self.shell(words, p, fish, depth) {
                return true;
            }
            if self.named(&name, "eval") && self.joined(words, p + 1, Quoting::Posix, depth) {
                return true;
            }
            if self.named(&name, "alias") || self.named(&name, "trap") {
                // `alias g='git push'`, `trap 'git push' EXIT`: code in a
                // string, read whether or not it is used.
                let trap = self.named(&name, "trap");
                let args = words.get(p + 1..).unwrap_or(&[]);
                let code = args.iter().filter(|a| !a.text.starts_with('-'));
                let code: Vec<&str> = if trap {
                    code.take(1).map(|a| if a.dynamic { "$_" } else { a.text.as_str() }).collect()
                } else {
                    code.filter_map(|a| a.text.split_once('=').map(|(_, v)| if a.dynamic { "$_" } else { v })).collect()
                };
                for c in code {
                    if c == "$_" || self.code(c, Quoting::Posix, depth + 1) {
                        return true;
                    }
                }
            }
            if (self.named(&name, "source") || self.named(&name, ".")) && words.get(p + 1).is_some_and(|f| f.dynamic || is_stdin(&f.text)) {
                return true;
            }
            if !exec_read && self.named(&name, "find") {
                exec_read = true;
                for (k, arg) in words.iter().enumerate().skip(p + 1) {
                    if matches!(arg.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                        next.push((k + 1, via));
                    }
                }
            }
            for (s, flags) in next {
                if let Some(r) = reach.get_mut(s) {
                    *r |= flags | REACHED;
                }
            }
        }
        false
    }

    /// Whether a program word read as `word` names `name`.
    pub(super) fn named(&mut self, word: &Name, name: &str) -> bool {
        match word {
            Name::Literal { base, trimmed } => *base == name || *trimmed == name,
            Name::Pattern(pat) => !self.spend(pat.len() * (name.len() + 1)) || glob_match(pat, name),
        }
    }

    /// Whether `w` may be `target`, the rule's word at subcommand level
    /// `level` (0: the word right after the program's global options).
    pub(super) fn word_is(&mut self, w: &Word, target: &str, program: Option<&Program>, level: usize) -> bool {
        if w.dynamic {
            return true;
        }
        if w.glob {
            let pat = w.pattern(0);
            return !self.spend(pat.len() * (target.len() + 1)) || glob_match(&pat, target);
        }
        if w.text == target {
            return true;
        }
        let Some(program) = program.filter(|_| level == 0) else { return false };
        let canon =
            |word: &str| program.aliases.iter().find(|(alias, _)| *alias == word).map_or(word.to_string(), |(_, c)| (*c).to_string());
        let (word, target) = (canon(&w.text), canon(target));
        word == target || (program.abbreviates && !word.is_empty() && !word.starts_with('-') && target.starts_with(&word))
    }

    /// Whether the rule's subcommand words follow from word `start` on.
    pub(super) fn args(&mut self, words: &[Word], start: usize, via: u8) -> bool {
        let rest = self.rest;
        if rest.is_empty() {
            return true;
        }
        let program = PROGRAMS.iter().find(|p| p.names.contains(&self.program));
        let n = words.len();
        // Which rule words have been matched at positions i, i+1, i+2: bit j
        // is "rest[..j] matched".
        let mut window = [1u64, 0, 0];
        let mut i = start;
        while window.iter().any(|w| *w != 0) {
            let mut set = window[0];
            window = [window[1], window[2], 0];
            if set != 0 {
                if i >= n {
                    // Out of words: `xargs` may add more.
                    return via & XARGS != 0;
                }
                if !self.spend(1) {
                    return true;
                }
                let w = &words[i];
                if w.splits || via & REPLACED != 0 {
                    return true;
                }
                while set != 0 {
                    let j = set.trailing_zeros() as usize;
                    set &= set - 1;
                    if self.word_is(w, rest[j], program, j) {
                        if j + 1 == rest.len() {
                            return true;
                        }
                        window[0] |= 1 << (j + 1);
                    }
                    let global = program.filter(|_| j == 0);
                    if j == 0 && global.is_some_and(|p| p.alias_options) && defines_alias(words, i) {
                        return true;
                    }
                    match skip(w, global, i == start) {
                        Skip::Not => {}
                        Skip::One => window[0] |= 1 << j,
                        Skip::Two => window[1] |= 1 << j,
                        Skip::Both => {
                            window[0] |= 1 << j;
                            window[1] |= 1 << j;
                        }
                    }
                }
            }
            i += 1;
        }
        false
    }

    /// Where the command may start after the wrapper at `p`; true when a
    /// command line the wrapper runs (`su -c`, `ssh host …`) may run the
    /// rule's command.
    pub(super) fn wrapper(
        &mut self,
        spec: &Wrapper,
        words: &[Word],
        p: usize,
        depth: usize,
        starts: &mut Vec<usize>,
        flags: &mut u8,
    ) -> bool {
        let mut firsts = Vec::new();
        if self.options(spec, words, p + 1, depth, &mut firsts, flags) {
            return true;
        }
        if spec.operands > 0 {
            let mut after = Vec::new();
            for f in firsts {
                if f + spec.operands < words.len() && self.options(spec, words, f + spec.operands, depth, &mut after, flags) {
                    return true;
                }
            }
            firsts = after;
        }
        if spec.joins {
            for f in firsts {
                if f < words.len() && self.joined(words, f, Quoting::Posix, depth) {
                    return true;
                }
            }
        } else {
            starts.extend(firsts);
        }
        false
    }

    /// The wrapper's options from word `start`: pushes every word where
    /// they may end to `out`.
    pub(super) fn options(
        &mut self,
        spec: &Wrapper,
        words: &[Word],
        start: usize,
        depth: usize,
        out: &mut Vec<usize>,
        flags: &mut u8,
    ) -> bool {
        let n = words.len();
        // Bit k: position i + k may be reached.
        let mut window: u8 = 1;
        let mut i = start;
        while window != 0 {
            if window & 1 != 0 {
                if i >= n || !self.spend(1) {
                    return i < n;
                }
                let w = &words[i];
                let t = w.text.as_str();
                if w.dynamic {
                    out.push(i);
                    window |= 0b110;
                } else if t == "--" {
                    out.push(i + 1);
                } else if t.len() > 1 && t.starts_with('-') {
                    if spec.stdin_words && (t.starts_with("-I") || t.starts_with("-i") || t.starts_with("-J") || t.starts_with("--replace"))
                    {
                        *flags |= REPLACED;
                    }
                    let (mask, code) = option_shape(spec, t);
                    window |= mask;
                    if let Some(value) = code {
                        let (first, rest_from) = match value {
                            Some(v) => (v.to_string(), i + 1),
                            None => match words.get(i + 1) {
                                Some(v) if v.dynamic => return true,
                                Some(v) => (v.text.clone(), i + 2),
                                None => (String::new(), i + 1),
                            },
                        };
                        if self.code_line(&first, words.get(rest_from..).unwrap_or(&[]), depth) {
                            return true;
                        }
                    }
                } else {
                    out.push(i);
                }
            }
            window >>= 1;
            i += 1;
        }
        false
    }

    /// Read `first` followed by `rest`'s words as one command line.
    pub(super) fn code_line(&mut self, first: &str, rest: &[Word], depth: usize) -> bool {
        if rest.iter().any(|w| w.dynamic) {
            return true;
        }
        let len = first.len() + rest.iter().map(|w| w.text.len() + 1).sum::<usize>();
        if !self.spend(len) {
            return true;
        }
        let mut line = String::with_capacity(len);
        line.push_str(first);
        for w in rest {
            line.push(' ');
            line.push_str(&w.text);
        }
        self.code(&line, Quoting::Posix, depth + 1)
    }

    /// Read `words[from..]` joined as a command line (`eval`, `ssh`).
    pub(super) fn joined(&mut self, words: &[Word], from: usize, q: Quoting, depth: usize) -> bool {
        let rest = words.get(from..).unwrap_or(&[]);
        match rest.split_first() {
            None => false,
            Some((first, _)) if first.dynamic => true,
            Some((first, rest)) if q == Quoting::Posix => self.code_line(&first.text, rest, depth),
            Some((first, _)) => self.code(&first.text, q, depth + 1),
        }
    }

    /// A shell at word `p`: its `-c` string is code; without one, and
    /// without a script file, it runs what standard input holds.
    pub(super) fn shell(&mut self, words: &[Word], p: usize, fish: bool, depth: usize) -> bool {
        let mut i = p + 1;
        let mut command = false;
        let mut stdin = false;
        while let Some(w) = words.get(i) {
            let t = w.text.as_str();
            if w.dynamic {
                return true;
            }
            if t == "--" || t == "-" {
                i += 1;
                break;
            }
            if let Some(long) = t.strip_prefix("--") {
                if let Some(code) = long.strip_prefix("command=") {
                    return self.code(code, if fish { Quoting::Fish } else { Quoting::Posix }, depth + 1);
                }
                command |= long == "command";
                i += if matches!(long, "rcfile" | "init-file" | "init-command") { 2 } else { 1 };
                continue;
            }
            if t.len() > 1 && (t.starts_with('-') || t.starts_with('+')) {
                let letters = &t[1..];
                command |= t.starts_with('-') && letters.contains('c');
                stdin |= t.starts_with('-') && letters.contains('s');
                i += if letters.ends_with(['o', 'O']) || (fish && letters.ends_with('C')) { 2 } else { 1 };
                continue;
            }
            break;
        }
        if command {
            return match words.get(i) {
                None => false,
                Some(w) if w.dynamic => true,
                Some(w) => self.code(&w.text, if fish { Quoting::Fish } else { Quoting::Posix }, depth + 1),
            };
        }
        match words.get(i) {
            None => true,
            Some(_) if stdin => true,
            Some(script) => script.dynamic || is_stdin(&script.text),
        }
    }

    /// Brace-expand every word (`{a,b}`, `{1..3}`); `None` when the budget
    /// is spent.
    pub(super) fn expand_braces(&mut self, words: &[Word]) -> Option<Vec<Word>> {
        let mut out = Vec::with_capacity(words.len());
        for w in words {
            if !w.braces {
                out.push(w.clone());
                continue;
            }
            if w.text.len() > MAX_BRACE_WORD {
                out.push(Word::unknown());
                continue;
            }
            let mut work = vec![pieces(w)];
            let mut made = 0;
            while let Some(item) = work.pop() {
                if !self.spend(4 * item.len() + 1) {
                    return None;
                }
                match brace_group(&item) {
                    None => {
                        out.push(from_pieces(&item, w));
                        made += 1;
                    }
                    Some((open, close, alternatives)) => {
                        if made + work.len() + alternatives.len() > MAX_EXPANSION {
                            // Too many to list: the rest is unknown.
                            out.push(Word::unknown());
                            work.clear();
                            break;
                        }
                        for alt in alternatives.into_iter().rev() {
                            let mut next = Vec::with_capacity(item.len());
                            next.extend_from_slice(&item[..open]);
                            next.extend(alt);
                            next.extend_from_slice(&item[close + 1..]);
                            work.push(next);
                        }
                    }
                }
            }
        }
        Some(out)
    }
}

/// Whether word `i` (an option of git's) defines an alias: `-c alias.x=…`,
/// `--config-env alias.x=…` (any subcommand may then be the rule's).
pub(super) fn defines_alias(words: &[Word], i: usize) -> bool {
    let is_alias = |w: &Word| w.dynamic || w.text.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("alias."));
    match words[i].text.as_str() {
        "-c" | "--config-env" => words.get(i + 1).is_some_and(is_alias),
        t => t.strip_prefix("--config-env=").is_some_and(|v| v.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("alias."))),
    }
}

/// `NAME=value`, `NAME+=value`, `NAME[i]=value`.
pub(super) fn is_assignment(text: &str) -> bool {
    let Some(eq) = text.find('=') else { return false };
    let name = text[..eq].trim_end_matches('+');
    let name = name.split('[').next().unwrap_or(name);
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(super) fn is_stdin(path: &str) -> bool {
    matches!(path, "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" | "-")
}
