//! The `email` format: Go's `net/mail.ParseAddress`, reduced to whether one address parses.

use super::net::go_parse_ip;

/// strfmt's `IsEmail`: Go's `net/mail.ParseAddress` succeeds (one address, with or without a display name).
pub(super) fn is_email(s: &str) -> bool {
    let mut p = MailParser { s };
    p.parse_single_address()
}

/// A port of Go's `net/mail` address parser, reduced to whether a single address parses.
struct MailParser<'a> {
    s: &'a str,
}

fn is_vchar(r: char) -> bool {
    ('!'..='~').contains(&r) || r as u32 >= 0x80
}

fn is_atext(r: char, dot: bool) -> bool {
    match r {
        '.' => dot,
        '(' | ')' | '<' | '>' | '[' | ']' | ':' | ';' | '@' | '\\' | ',' | '"' => false,
        r => is_vchar(r),
    }
}

fn is_qtext(r: char) -> bool {
    r != '\\' && r != '"' && is_vchar(r)
}

fn is_wsp(r: char) -> bool {
    r == ' ' || r == '\t'
}

impl<'a> MailParser<'a> {
    fn parse_single_address(&mut self) -> bool {
        let Some(count) = self.parse_address(true) else {
            return false;
        };
        self.skip_cfws() && self.s.is_empty() && count == 1
    }

    /// The number of addresses parsed (a group may hold several or none).
    fn parse_address(&mut self, handle_group: bool) -> Option<usize> {
        self.skip_space();
        if self.s.is_empty() {
            return None;
        }
        if self.consume_addr_spec() {
            self.skip_space();
            if self.s.starts_with('(') && !self.consume_display_name_comment() {
                return None;
            }
            return Some(1);
        }
        if !self.s.starts_with('<') {
            self.consume_phrase()?;
        }
        self.skip_space();
        if handle_group && self.consume(':') {
            return self.consume_group_list();
        }
        if !self.consume('<') || !self.consume_addr_spec() || !self.consume('>') {
            return None;
        }
        Some(1)
    }

    fn consume_group_list(&mut self) -> Option<usize> {
        let mut count = 0;
        self.skip_space();
        if self.consume(';') {
            return self.skip_cfws().then_some(0);
        }
        loop {
            self.skip_space();
            count += self.parse_address(false)?;
            if !self.skip_cfws() {
                return None;
            }
            if self.consume(';') {
                return self.skip_cfws().then_some(count);
            }
            if !self.consume(',') {
                return None;
            }
        }
    }

    /// An addr-spec; on failure the input is left as it was.
    fn consume_addr_spec(&mut self) -> bool {
        let orig = self.s;
        let ok = self.addr_spec();
        if !ok {
            self.s = orig;
        }
        ok
    }

    fn addr_spec(&mut self) -> bool {
        self.skip_space();
        if self.s.is_empty() {
            return false;
        }
        let local_ok = if self.s.starts_with('"') {
            matches!(self.consume_quoted_string(), Some(local) if !local.is_empty())
        } else {
            self.consume_atom(true, false).is_some()
        };
        if !local_ok || !self.consume('@') {
            return false;
        }
        self.skip_space();
        if self.s.is_empty() {
            return false;
        }
        if self.s.starts_with('[') {
            self.consume_domain_literal()
        } else {
            self.consume_atom(true, false).is_some()
        }
    }

    fn consume_phrase(&mut self) -> Option<()> {
        let mut words = 0;
        let mut failed = false;
        loop {
            if words > 0 && !self.skip_cfws() {
                return None;
            }
            self.skip_space();
            if self.s.is_empty() {
                break;
            }
            let word_ok = if self.s.starts_with('"') {
                self.consume_quoted_string().is_some()
            } else {
                match self.consume_atom(true, true) {
                    Some(atom) => !unsupported_encoded_word(atom),
                    None => false,
                }
            };
            if !word_ok {
                failed = true;
                break;
            }
            words += 1;
        }
        (!failed || words > 0).then_some(())
    }

    fn consume_quoted_string(&mut self) -> Option<String> {
        let mut out = String::new();
        let mut escaped = false;
        let mut chars = self.s.char_indices().skip(1);
        loop {
            let (i, r) = chars.next()?;
            if escaped {
                if !is_vchar(r) && !is_wsp(r) {
                    return None;
                }
                out.push(r);
                escaped = false;
            } else if is_qtext(r) || is_wsp(r) {
                out.push(r);
            } else if r == '"' {
                self.s = &self.s[i + 1..];
                return Some(out);
            } else if r == '\\' {
                escaped = true;
            } else {
                return None;
            }
        }
    }

    fn consume_atom(&mut self, dot: bool, permissive: bool) -> Option<&'a str> {
        let end = self.s.find(|r| !is_atext(r, dot)).unwrap_or(self.s.len());
        if end == 0 {
            return None;
        }
        let atom = &self.s[..end];
        self.s = &self.s[end..];
        if !permissive && (atom.starts_with('.') || atom.contains("..") || atom.ends_with('.')) {
            return None;
        }
        Some(atom)
    }

    fn consume_domain_literal(&mut self) -> bool {
        if !self.consume('[') {
            return false;
        }
        let Some(end) = self.s.find(']') else {
            return false;
        };
        let dtext = &self.s[..end];
        if !dtext.chars().all(|r| r != '[' && r != '\\' && is_vchar(r)) {
            return false;
        }
        self.s = &self.s[end + 1..];
        go_parse_ip(dtext)
    }

    fn consume_display_name_comment(&mut self) -> bool {
        if !self.consume('(') {
            return false;
        }
        match self.consume_comment() {
            Some(comment) => !comment
                .split([' ', '\t'])
                .filter(|w| !w.is_empty())
                .any(unsupported_encoded_word),
            None => false,
        }
    }

    fn consume(&mut self, c: char) -> bool {
        match self.s.strip_prefix(c) {
            Some(rest) => {
                self.s = rest;
                true
            }
            None => false,
        }
    }

    fn skip_space(&mut self) {
        self.s = self.s.trim_start_matches([' ', '\t']);
    }

    fn skip_cfws(&mut self) -> bool {
        self.skip_space();
        while self.consume('(') {
            if self.consume_comment().is_none() {
                return false;
            }
            self.skip_space();
        }
        true
    }

    fn consume_comment(&mut self) -> Option<String> {
        let mut depth = 1;
        let mut comment = Vec::new();
        let mut b = self.s.as_bytes();
        while !b.is_empty() && depth > 0 {
            if b[0] == b'\\' && b.len() > 1 {
                b = &b[1..];
            } else if b[0] == b'(' {
                depth += 1;
            } else if b[0] == b')' {
                depth -= 1;
            }
            if depth > 0 {
                comment.push(b[0]);
            }
            b = &b[1..];
        }
        self.s = &self.s[self.s.len() - b.len()..];
        (depth == 0).then(|| String::from_utf8_lossy(&comment).into_owned())
    }
}

/// Whether a word is an RFC 2047 encoded word that Go's `mime.WordDecoder` decodes but cannot convert (a charset other
/// than UTF-8, ISO-8859-1 and US-ASCII): the only encoded words that make `net/mail` fail.
fn unsupported_encoded_word(word: &str) -> bool {
    if word.len() < 8 || !word.starts_with("=?") || !word.ends_with("?=") || word.matches('?').count() != 4 {
        return false;
    }
    let inner = &word[2..word.len() - 2];
    let mut parts = inner.splitn(3, '?');
    let (Some(charset), Some(encoding), Some(text)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    if charset.is_empty() || encoding.len() != 1 {
        return false;
    }
    let decodes = match encoding {
        "B" | "b" => {
            // Go's StdEncoding, which accepts non-zero trailing bits.
            use base64::Engine as _;
            let config = base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true);
            base64::engine::GeneralPurpose::new(&base64::alphabet::STANDARD, config)
                .decode(text)
                .is_ok()
        }
        "Q" | "q" => {
            let b = text.as_bytes();
            let mut i = 0;
            let mut ok = true;
            while ok && i < b.len() {
                match b[i] {
                    b'=' => {
                        ok = i + 2 < b.len() && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit();
                        i += 3;
                    }
                    c => {
                        ok = (b' '..=b'~').contains(&c) || matches!(c, b'\n' | b'\r' | b'\t');
                        i += 1;
                    }
                }
            }
            ok
        }
        _ => false,
    };
    decodes
        && !["utf-8", "iso-8859-1", "us-ascii"]
            .iter()
            .any(|c| c.eq_ignore_ascii_case(charset))
}
