//! String formats, as kube-apiserver checks them: the formats CRD schemas support
//! (apiextensions-apiserver `pkg/apiserver/validation/formats.go`, at 1.37) with kube-openapi's validators
//! (`pkg/validation/strfmt`), which wrap Go's standard library (`net/url`, `net/mail`, `net`, `time`) and
//! `k8s.io/utils/net`. Each check here is a port of the Go function it names.
//!
//! Names are compared after removing `-` (go-openapi's name normalisation), so `date-time` is `datetime`. A format
//! kube does not support for the schema's type is ignored, as kube strips it from the schema
//! ([`effective_format`]).

mod mail;
mod net;

use std::sync::LazyLock;

use regex::Regex;

/// The formats CRD schemas support at 1.37, normalised, each validated by kube-openapi's default registry.
const SUPPORTED: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    // Since 1.34.
    "k8sshortname",
    "k8slongname",
];

fn normalize(name: &str) -> String {
    name.replace('-', "")
}

/// The format kube validates for a schema of these types: `StripUnsupportedFormatsPostProcessorForVersion` keeps a
/// string format only if supported, `int32`/`int64` for integers, `float`/`double` for numbers and nothing for other
/// types. A schema with several types (`x-kubernetes-int-or-string`) or none is treated as a string.
pub(super) fn effective_format<'a>(format: &'a str, types: &[&str]) -> &'a str {
    if format.is_empty() {
        return "";
    }
    let single = if types.len() == 1 { types[0] } else { "" };
    let keep = match single {
        "" | "string" => SUPPORTED.contains(&normalize(format).as_str()),
        "integer" => format == "int32" || format == "int64",
        "number" => format == "float" || format == "double",
        _ => false,
    };
    if keep {
        format
    } else {
        ""
    }
}

/// Whether kube-openapi's default registry knows the format (and so checks strings against it).
pub(super) fn known(format: &str) -> bool {
    SUPPORTED.contains(&normalize(format).as_str())
}

/// Whether `data` is valid for a known format (`strfmt.Default.Validates`).
pub(super) fn validates(format: &str, data: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => data.len() == 24 && data.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => net::is_request_uri(data),
        "email" => mail::is_email(data),
        "hostname" => is_hostname(data),
        "ipv4" => net::is_ipv4(data),
        "ipv6" => net::is_ipv6(data),
        "cidr" => net::is_cidr(data),
        "mac" => net::is_mac(data),
        "uuid" => is_uuid(data, None),
        "uuid3" => is_uuid(data, Some('3')),
        "uuid4" => is_uuid(data, Some('4')),
        "uuid5" => is_uuid(data, Some('5')),
        "isbn" => is_isbn10(data) || is_isbn13(data),
        "isbn10" => is_isbn10(data),
        "isbn13" => is_isbn13(data),
        "creditcard" => is_credit_card(data),
        "ssn" => is_ssn(data),
        "hexcolor" => is_hex_color(data),
        "rgbcolor" => is_rgb_color(data),
        "byte" => is_base64(data),
        "password" => true,
        "date" => is_date(data),
        "duration" => is_duration(data),
        "datetime" => is_date_time(data),
        "k8sshortname" => data.len() <= 63 && is_k8s_short_name(data),
        "k8slongname" => data.len() <= 253 && data.split('.').all(is_k8s_short_name),
        _ => false,
    }
}

fn regex(pattern: &str) -> Regex {
    // The patterns are constants of this file, tested to compile.
    Regex::new(pattern).unwrap_or_else(|e| unreachable!("built-in pattern {pattern}: {e}"))
}

/// Whether a character is a Unicode letter or symbol (`\p{L}`, `\p{S}`).
fn is_letter_or_symbol(c: char) -> bool {
    static CLASS: LazyLock<Regex> = LazyLock::new(|| regex(r"^[\p{L}\p{S}]$"));
    if c.is_ascii() {
        return c.is_ascii_alphabetic() || matches!(c, '$' | '+' | '<' | '=' | '>' | '^' | '`' | '|' | '~');
    }
    CLASS.is_match(c.encode_utf8(&mut [0; 4]))
}

/// Whether a character is a Unicode letter (`\p{L}`).
fn is_letter(c: char) -> bool {
    static CLASS: LazyLock<Regex> = LazyLock::new(|| regex(r"^\p{L}$"));
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    CLASS.is_match(c.encode_utf8(&mut [0; 4]))
}

/// strfmt's `IsHostname`: its `HostnamePattern`, written out (a single label, which may hold a `-` only after its
/// first character, or dot-separated labels of 1 to 63 characters ending in a top-level domain of 2 to 63 letters;
/// digits, letters and symbols in any script), then at most 255 bytes and 63 bytes a label.
fn is_hostname(s: &str) -> bool {
    let a = |c: char| c.is_ascii_digit() || is_letter_or_symbol(c);
    let label = |l: &str| {
        let chars: Vec<char> = l.chars().collect();
        match chars.as_slice() {
            [] => false,
            [only] => a(*only),
            [first, middle @ .., last] => {
                chars.len() <= 63 && a(*first) && a(*last) && middle.iter().all(|c| *c == '-' || a(*c))
            }
        }
    };
    let matches = match s.rsplit_once('.') {
        None => {
            let mut chars = s.chars();
            match chars.next() {
                Some(first) if a(first) => {
                    let rest = chars.as_str();
                    let rest = rest.strip_prefix('-').unwrap_or(rest);
                    rest.chars().count() <= 62 && rest.chars().all(a)
                }
                _ => false,
            }
        }
        Some((labels, tld)) => {
            (2..=63).contains(&tld.chars().count()) && tld.chars().all(is_letter) && labels.split('.').all(label)
        }
    };
    matches && s.len() <= 255 && s.split('.').all(|l| l.len() <= 63)
}

/// `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?V[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$` and its variants: hyphens optional,
/// a version digit and a variant digit for uuid3/4/5 (uuid3 has no variant check).
fn is_uuid(s: &str, version: Option<char>) -> bool {
    let groups: [usize; 5] = [8, 4, 4, 4, 12];
    let mut rest = s;
    for (i, len) in groups.iter().enumerate() {
        if i > 0 {
            rest = rest.strip_prefix('-').unwrap_or(rest);
        }
        let Some(group) = rest.get(..*len) else {
            return false;
        };
        if !group.bytes().all(|b| b.is_ascii_hexdigit()) {
            return false;
        }
        let first = group.chars().next().map(|c| c.to_ascii_lowercase());
        match (i, version) {
            (2, Some(v)) if first != Some(v) => return false,
            (3, Some('4' | '5')) if !matches!(first, Some('8' | '9' | 'a' | 'b')) => return false,
            _ => {}
        }
        rest = &rest[*len..];
    }
    rest.is_empty()
}

fn is_k8s_short_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    let ok = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.first().is_some_and(ok)
        && bytes.last().is_some_and(ok)
        && bytes.iter().all(|b| ok(b) || *b == b'-')
}

/// govalidator's `IsSSN`: 11 characters matching `^\d{3}[- ]?\d{2}[- ]?\d{4}$`.
fn is_ssn(s: &str) -> bool {
    static SSN: LazyLock<Regex> = LazyLock::new(|| regex(r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$"));
    s.len() == 11 && SSN.is_match(s)
}

fn is_hex_color(s: &str) -> bool {
    let hex = s.strip_prefix('#').unwrap_or(s);
    (hex.len() == 3 || hex.len() == 6) && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_rgb_color(s: &str) -> bool {
    static RGB: LazyLock<Regex> = LazyLock::new(|| {
        let n = r"(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])";
        let sp = r"[\t\n\x0C\r ]*";
        regex(&format!(r"^rgb\({sp}{n}{sp},{sp}{n}{sp},{sp}{n}{sp}\)$"))
    });
    RGB.is_match(s)
}

/// govalidator's `IsBase64`: `^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$`.
fn is_base64(s: &str) -> bool {
    let b = s.as_bytes();
    let alphabet = |c: &u8| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/';
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let (body, last) = b.split_at(b.len() - 4);
    body.iter().all(alphabet)
        && match last {
            [a, b, b'=', b'='] => alphabet(a) && alphabet(b),
            [a, b, c, b'='] => alphabet(a) && alphabet(b) && alphabet(c),
            quad => quad.iter().all(alphabet),
        }
}

/// govalidator's `IsCreditCard`: the digits (anything else removed) match the card pattern and the Luhn check.
fn is_credit_card(s: &str) -> bool {
    static CARD: LazyLock<Regex> = LazyLock::new(|| {
        regex(
            r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})$",
        )
    });
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !CARD.is_match(&digits) {
        return false;
    }
    let mut sum = 0;
    for (i, d) in digits.bytes().rev().enumerate() {
        let mut n = u32::from(d - b'0');
        if i % 2 == 1 {
            n *= 2;
            if n >= 10 {
                n = n % 10 + 1;
            }
        }
        sum += n;
    }
    sum % 10 == 0
}

/// Removes whitespace (Go's `\s`) and `-`, as govalidator does before an ISBN check.
fn isbn_digits(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ' | '-'))
        .collect()
}

fn is_isbn10(s: &str) -> bool {
    let s = isbn_digits(s);
    let b = s.as_bytes();
    if b.len() != 10 || !b[..9].iter().all(u8::is_ascii_digit) || !(b[9].is_ascii_digit() || b[9] == b'X') {
        return false;
    }
    let mut sum: u32 = (0..9).map(|i| (i as u32 + 1) * u32::from(b[i] - b'0')).sum();
    sum += 10 * if b[9] == b'X' { 10 } else { u32::from(b[9] - b'0') };
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let s = isbn_digits(s);
    let b = s.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = (0..12).map(|i| [1, 3][i % 2] * u32::from(b[i] - b'0')).sum();
    u32::from(b[12] - b'0') == (10 - sum % 10) % 10
}

/// Go's `time.Parse("2006-01-02", s)` succeeds: four digits, two, two, and a day that exists.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r.clone()]
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| s[r].parse().ok())
            .flatten()
    };
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// strfmt's `IsDateTime`: a date, a `t`, then `hh:mm:ss[.frac](z|±hh:mm)` (case-insensitive), hours up to 23 and
/// minutes and seconds up to 59 compared as text.
fn is_date_time(s: &str) -> bool {
    static TIME: LazyLock<Regex> =
        LazyLock::new(|| regex(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"));
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    match TIME.captures(parts[1]) {
        Some(m) => &m[1] <= "23" && &m[2] <= "59" && &m[3] <= "59",
        None => false,
    }
}

/// strfmt's `IsDuration`: Go's `time.ParseDuration`, or else any `<digits><space><unit>` in the text with a unit
/// such as `ns`, `us`, `ms`, `s`, `sec`, `m`, `min`, `h`, `hour`, `d`, `day`, `w` or `week` (prefixes of the
/// longest spelling allowed).
fn is_duration(s: &str) -> bool {
    static MATCHER: LazyLock<Regex> = LazyLock::new(|| regex(r"(([0-9]+)[\t\n\x0C\r ]*([A-Za-zµ]+))"));
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    if go_parse_duration(s) {
        return true;
    }
    let mut ok = false;
    for m in MATCHER.captures_iter(s) {
        if m[2].parse::<i64>().is_err() {
            return false;
        }
        let unit = m[3].trim().to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, variant) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(variant)) || variant.to_lowercase() == unit {
                    ok = true;
                }
            }
        }
    }
    ok
}

/// Go's `time.ParseDuration` succeeds.
fn go_parse_duration(orig: &str) -> bool {
    const LIMIT: u64 = 1 << 63;
    let mut s = orig;
    if let Some(rest) = s.strip_prefix(['-', '+']) {
        s = rest;
    }
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        let b = s.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return false;
        }
        let int_len = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let mut v: u64 = 0;
        for c in &b[..int_len] {
            if v > LIMIT / 10 {
                return false;
            }
            v = v * 10 + u64::from(c - b'0');
            if v > LIMIT {
                return false;
            }
        }
        s = &s[int_len..];
        let mut frac: u64 = 0;
        let mut scale = 1.0f64;
        let mut post = false;
        if let Some(rest) = s.strip_prefix('.') {
            let frac_len = rest.bytes().take_while(u8::is_ascii_digit).count();
            let mut overflow = false;
            for c in rest[..frac_len].bytes() {
                if overflow {
                    continue;
                }
                if frac > (LIMIT - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let y = frac * 10 + u64::from(c - b'0');
                if y > LIMIT {
                    overflow = true;
                    continue;
                }
                frac = y;
                scale *= 10.0;
            }
            post = frac_len > 0;
            s = &rest[frac_len..];
        }
        if int_len == 0 && !post {
            return false;
        }
        let unit_len = s.bytes().take_while(|c| !(*c == b'.' || c.is_ascii_digit())).count();
        if unit_len == 0 {
            return false;
        }
        let unit: u64 = match &s[..unit_len] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return false,
        };
        s = &s[unit_len..];
        if v > LIMIT / unit {
            return false;
        }
        v *= unit;
        if frac > 0 {
            v += (frac as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return false;
            }
        }
        total += v;
        if total > LIMIT {
            return false;
        }
    }
    orig.starts_with('-') || total < LIMIT
}
