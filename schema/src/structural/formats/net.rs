//! The network formats: `ipv4`, `ipv6`, `cidr` and `mac` (Go's `net` and `k8s.io/utils/net`), and `uri` (Go's
//! `net/url.ParseRequestURI`).

/// strfmt's `ipv4`: `k8s.io/utils/net.ParseIPSloppy` parses it (IPv6 too) and it holds a `.`.
pub(super) fn is_ipv4(s: &str) -> bool {
    parse_ip_sloppy(s).is_some() && s.contains('.')
}

/// govalidator's `IsIPv6`: Go's `net.ParseIP` parses it (IPv4 too, no zone) and it holds a `:`.
pub(super) fn is_ipv6(s: &str) -> bool {
    go_parse_ip(s) && s.contains(':')
}

/// strfmt's `cidr`: `k8s.io/utils/net.ParseCIDRSloppy` succeeds.
pub(super) fn is_cidr(s: &str) -> bool {
    is_cidr_sloppy(s)
}

/// Go's `net.ParseMAC` succeeds: 6, 8 or 20 octets as `xx:xx`, `xx-xx` or `xxxx.xxxx`, or plain hex digits.
pub(super) fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 12 {
        return false;
    }
    let hex2 = |pair: &[u8]| pair.len() >= 2 && pair[0].is_ascii_hexdigit() && pair[1].is_ascii_hexdigit();
    let octets_ok = |n: usize| matches!(n, 6 | 8 | 20);
    if b[2] == b':' || b[2] == b'-' {
        if !(b.len() + 1).is_multiple_of(3) || !octets_ok((b.len() + 1) / 3) {
            return false;
        }
        b.chunks(3).all(|c| hex2(c) && (c.len() == 2 || c[2] == b[2]))
    } else if b[4] == b'.' {
        if !(b.len() + 1).is_multiple_of(5) || !octets_ok(2 * (b.len() + 1) / 5) {
            return false;
        }
        b.chunks(5)
            .all(|c| c.len() >= 4 && hex2(&c[..2]) && hex2(&c[2..4]) && (c.len() == 4 || c[4] == b'.'))
    } else {
        b.len().is_multiple_of(2) && octets_ok(b.len() / 2) && b.chunks(2).all(hex2)
    }
}

/// `k8s.io/utils/net.ParseIPSloppy` (Go 1.16's parser: IPv4 octets may have leading zeros).
fn parse_ip_sloppy(s: &str) -> Option<()> {
    for c in s.bytes() {
        match c {
            b'.' => return sloppy_ipv4(s).map(|_| ()),
            b':' => return sloppy_ipv6(s),
            _ => {}
        }
    }
    None
}

/// Go 1.16's `dtoi`: decimal digits below 0xFFFFFF; the value and how many bytes it used.
fn dtoi(s: &[u8]) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        n = n * 10 + u32::from(s[i] - b'0');
        if n >= 0xFF_FFFF {
            return None;
        }
        i += 1;
    }
    (i > 0).then_some((n, i))
}

fn sloppy_ipv4(s: &str) -> Option<[u8; 4]> {
    let mut b = s.as_bytes();
    let mut out = [0u8; 4];
    for (i, octet) in out.iter_mut().enumerate() {
        if b.is_empty() {
            return None;
        }
        if i > 0 {
            if b[0] != b'.' {
                return None;
            }
            b = &b[1..];
        }
        let (n, used) = dtoi(b)?;
        if n > 0xFF {
            return None;
        }
        *octet = n as u8;
        b = &b[used..];
    }
    b.is_empty().then_some(out)
}

fn sloppy_ipv6(s: &str) -> Option<()> {
    ipv6_groups(s, false)
}

/// The groups of an IPv6 address without its zone (hex groups between colons, at most one `::`, an IPv4 address
/// last), as Go reads them: `netip` (`strict`: at most four hex digits a group, [`strict_ipv4`]) or the older `net`
/// (any number of digits up to 0xFFFF, [`sloppy_ipv4`]).
fn ipv6_groups(addr: &str, strict: bool) -> Option<()> {
    let mut b = addr.as_bytes();
    let mut ellipsis: Option<usize> = None;
    if b.starts_with(b"::") {
        ellipsis = Some(0);
        b = &b[2..];
        if b.is_empty() {
            return Some(());
        }
    }
    let mut i = 0;
    while i < 16 {
        let hex_len = b.iter().take_while(|c| c.is_ascii_hexdigit()).count();
        if hex_len == 0 || (strict && hex_len > 4) || hex_group(&b[..hex_len]).is_none() {
            return None;
        }
        if hex_len < b.len() && b[hex_len] == b'.' {
            if (ellipsis.is_none() && i != 12) || i + 4 > 16 {
                return None;
            }
            let ipv4 = std::str::from_utf8(b).ok()?;
            let valid = if strict {
                strict_ipv4(ipv4)
            } else {
                sloppy_ipv4(ipv4).is_some()
            };
            if !valid {
                return None;
            }
            b = &[];
            i += 4;
            break;
        }
        i += 2;
        b = &b[hex_len..];
        if b.is_empty() {
            break;
        }
        if b[0] != b':' || b.len() == 1 {
            return None;
        }
        b = &b[1..];
        if b[0] == b':' {
            if ellipsis.is_some() {
                return None;
            }
            ellipsis = Some(i);
            b = &b[1..];
            if b.is_empty() {
                break;
            }
        }
    }
    if !b.is_empty() || (i < 16) != ellipsis.is_some() {
        return None;
    }
    Some(())
}

/// A group's hex digits as a 16-bit value, as `net` reads them (it gives up once the value passes 0xFFFFFF).
fn hex_group(digits: &[u8]) -> Option<u16> {
    let mut n: u32 = 0;
    for c in digits {
        n = n * 16 + (*c as char).to_digit(16).unwrap_or(0);
        if n >= 0xFF_FFFF {
            return None;
        }
    }
    u16::try_from(n).ok()
}

/// `k8s.io/utils/net.ParseCIDRSloppy` succeeds.
fn is_cidr_sloppy(s: &str) -> bool {
    let Some((addr, mask)) = s.split_once('/') else {
        return false;
    };
    let bits = if sloppy_ipv4(addr).is_some() {
        32
    } else if sloppy_ipv6(addr).is_some() {
        128
    } else {
        return false;
    };
    matches!(dtoi(mask.as_bytes()), Some((n, used)) if used == mask.len() && n <= bits)
}

/// Go's `netip.ParseAddr`: `Some(has_zone)` for a valid address (strict IPv4: no leading zeros).
fn parse_addr(s: &str) -> Option<bool> {
    for c in s.bytes() {
        match c {
            b'.' => return strict_ipv4(s).then_some(false),
            b':' => return strict_ipv6(s),
            b'%' => return None,
            _ => {}
        }
    }
    None
}

/// Go's `net.ParseIP` succeeds (a `netip` address without a zone).
pub(super) fn go_parse_ip(s: &str) -> bool {
    parse_addr(s) == Some(false)
}

fn strict_ipv4(s: &str) -> bool {
    let b = s.as_bytes();
    let (mut val, mut pos, mut digits) = (0u32, 0, 0);
    for (i, &c) in b.iter().enumerate() {
        if c.is_ascii_digit() {
            if digits == 1 && val == 0 {
                return false;
            }
            val = val * 10 + u32::from(c - b'0');
            digits += 1;
            if val > 255 {
                return false;
            }
        } else if c == b'.' {
            if i == 0 || i == b.len() - 1 || b[i - 1] == b'.' || pos == 3 {
                return false;
            }
            pos += 1;
            val = 0;
            digits = 0;
        } else {
            return false;
        }
    }
    pos == 3
}

/// `netip`'s IPv6 parser; `Some(has_zone)` when valid.
fn strict_ipv6(input: &str) -> Option<bool> {
    let (addr, zone) = match input.split_once('%') {
        Some((_, "")) => return None,
        Some((addr, _)) => (addr, true),
        None => (input, false),
    };
    ipv6_groups(addr, true).map(|()| zone)
}

/// Go's `net/url` escape modes that can fail.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Host,
    Zone,
    Other,
}

/// Go's `shouldEscape(c, encodeHost)`: the ASCII bytes a host may not hold unescaped.
fn host_should_escape(c: u8) -> bool {
    !(c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'-' | b'_'
                | b'.'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        ))
}

/// Go's `net/url.unescape`: `Some(unescaped)` when every `%` escape is well formed and allowed in the mode.
fn unescape(s: &str, mode: Mode) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len() || !b[i + 1].is_ascii_hexdigit() || !b[i + 2].is_ascii_hexdigit() {
                    return None;
                }
                let hi = (b[i + 1] as char).to_digit(16).unwrap_or(0) as u8;
                let v = hi << 4 | (b[i + 2] as char).to_digit(16).unwrap_or(0) as u8;
                let is_25 = &b[i..i + 3] == b"%25";
                if mode == Mode::Host && hi < 8 && !is_25 {
                    return None;
                }
                if mode == Mode::Zone && !is_25 && v != b' ' && v < 0x80 && host_should_escape(v) {
                    return None;
                }
                out.push(v);
                i += 3;
            }
            c => {
                if mode != Mode::Other && c < 0x80 && host_should_escape(c) {
                    return None;
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|c| c.is_ascii_digit()))
}

/// Go's `net/url.parseHost` succeeds (colons strict for http and https, Go's default since 1.26).
fn valid_host(scheme: &str, host: &str) -> bool {
    match host.rfind('[') {
        Some(i) if i > 0 => return false,
        Some(_) => {
            let Some(close) = host.rfind(']') else {
                return false;
            };
            let colon_port = &host[close + 1..];
            if !valid_optional_port(colon_port) || unescape(colon_port, Mode::Host).is_none() {
                return false;
            }
            let hostname = &host[1..close];
            let unescaped = match hostname.find("%25") {
                Some(zone) => {
                    let (Some(mut host_part), Some(zone_part)) = (
                        unescape(&hostname[..zone], Mode::Host),
                        unescape(&hostname[zone..], Mode::Zone),
                    ) else {
                        return false;
                    };
                    host_part.extend(zone_part);
                    host_part
                }
                None => match unescape(hostname, Mode::Host) {
                    Some(h) => h,
                    None => return false,
                },
            };
            let Ok(text) = String::from_utf8(unescaped) else {
                return false;
            };
            // A valid netip address that is not plain IPv4.
            return parse_addr(&text).is_some() && !strict_ipv4(&text);
        }
        None => {}
    }
    if let Some(first) = host.find(':') {
        let last = host.rfind(':').unwrap_or(first);
        let i = if last != first && (scheme == "http" || scheme == "https") {
            first
        } else {
            last
        };
        if !valid_optional_port(&host[i..]) {
            return false;
        }
    }
    unescape(host, Mode::Host).is_some()
}

fn valid_userinfo(s: &str) -> bool {
    s.chars().all(|r| {
        r.is_ascii_alphanumeric()
            || matches!(
                r,
                '-' | '.'
                    | '_'
                    | ':'
                    | '~'
                    | '!'
                    | '$'
                    | '&'
                    | '\''
                    | '('
                    | ')'
                    | '*'
                    | '+'
                    | ','
                    | ';'
                    | '='
                    | '%'
                    | '@'
            )
    })
}

/// Go's `url.ParseRequestURI` succeeds: an absolute URI, or an absolute path.
pub(super) fn is_request_uri(raw: &str) -> bool {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) || raw.is_empty() {
        return false;
    }
    if raw == "*" {
        return true;
    }
    // getScheme
    let mut scheme = "";
    let mut rest = raw;
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return false,
            b':' => {
                scheme = &raw[..i];
                rest = &raw[i + 1..];
                break;
            }
            _ => break,
        }
    }
    let scheme = scheme.to_ascii_lowercase();
    rest = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        &rest[..rest.len() - 1]
    } else {
        rest.split_once('?').map_or(rest, |(before, _)| before)
    };
    if !rest.starts_with('/') {
        return !scheme.is_empty();
    }
    if !scheme.is_empty() && rest.starts_with("//") {
        let after = &rest[2..];
        let (authority, path) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        let (userinfo, host) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        if !valid_host(&scheme, host) {
            return false;
        }
        if let Some(userinfo) = userinfo {
            if !valid_userinfo(userinfo) {
                return false;
            }
            let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            if unescape(user, Mode::Other).is_none() || unescape(password, Mode::Other).is_none() {
                return false;
            }
        }
        rest = path;
    }
    unescape(rest, Mode::Other).is_some()
}
