//! `isURL(string)` from Kubernetes' CEL URL library (`k8s.io/apiserver/pkg/cel/library/urls.go`): whether Go's
//! `url.ParseRequestURI` accepts the string, that is an absolute URL or an absolute path. The checks below are
//! those of Go's `net/url` parser in request mode.

use ::cel::common::types::CelBool;
use ::cel::common::value::CowVal;
use ::cel::ExecutionError;

use super::values::string_arg;

/// The CEL function `isURL(string) -> bool`.
pub(super) fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let Some(text) = args.first() else {
        return Err(ExecutionError::invalid_argument_count(1, args.len()));
    };
    Ok(CowVal::owned(CelBool::from(parses_as_request_uri(string_arg(text)?))))
}

/// Go's `url.ParseRequestURI(s)` succeeds.
pub(super) fn parses_as_request_uri(s: &str) -> bool {
    // "net/url: invalid control character in URL".
    if s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    let (scheme, rest) = match scheme(s) {
        Ok(split) => split,
        Err(()) => return false,
    };
    // In request mode the query is cut off first and the fragment stays in the path.
    let rest = match rest.split_once('?') {
        Some((before, _)) => before,
        None => rest,
    };
    // Neither an absolute path nor an authority: an opaque URL or a relative path, which a request may not use.
    if !rest.starts_with('/') {
        return false;
    }
    let path = if !scheme.is_empty() && rest.starts_with("//") && !rest.starts_with("///") {
        let after = &rest[2..];
        let (authority, path) = after.find('/').map_or((after, ""), |i| after.split_at(i));
        if !authority_ok(authority) {
            return false;
        }
        path
    } else {
        rest
    };
    escapes_ok(path)
}

/// `getScheme`: the scheme before the first `:`, if the text before it is one; an error for a leading `:`.
fn scheme(s: &str) -> Result<(&str, &str), ()> {
    for (i, c) in s.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err(()),
            ':' => return Ok((&s[..i], &s[i + 1..])),
            // Not a scheme: the whole text is the rest.
            _ => return Ok(("", s)),
        }
    }
    Ok(("", s))
}

/// `parseAuthority`: optional user information before the last `@`, then a host with an optional port.
fn authority_ok(authority: &str) -> bool {
    let host = match authority.rfind('@') {
        Some(i) => {
            let user = &authority[..i];
            if !user
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c))
            {
                return false;
            }
            &authority[i + 1..]
        }
        None => authority,
    };
    host_ok(host)
}

/// `parseHost`: a bracketed IPv6 literal with an optional port, or a name with an optional numeric port; only the
/// characters Go allows in a host.
fn host_ok(host: &str) -> bool {
    let (name, port) = if let Some(inner) = host.strip_prefix('[') {
        let Some(end) = inner.find(']') else {
            return false;
        };
        let port = &inner[end + 1..];
        if !port.is_empty() && !port.starts_with(':') {
            return false;
        }
        (&inner[..end], port)
    } else {
        match host.rfind(':') {
            Some(i) => (&host[..i], &host[i..]),
            None => (host, ""),
        }
    };
    if !port.is_empty() && !port[1..].bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:[]%".contains(c) || !c.is_ascii())
        && escapes_ok(name)
}

/// Every `%` starts a two-digit hexadecimal escape.
fn escapes_ok(s: &str) -> bool {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            if i + 2 >= bytes.len() || !(bytes[i + 1].is_ascii_hexdigit() && bytes[i + 2].is_ascii_hexdigit()) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::parses_as_request_uri;

    #[test]
    fn request_uris_parse_as_go_parses_them() {
        for ok in [
            "https://example.com/x",
            "http://user:pw@example.com:8080/a?b=c",
            "/absolute/path",
            "http://[::1]:80/",
            "https://example.com",
        ] {
            assert!(parses_as_request_uri(ok), "{ok}");
        }
        for bad in [
            "not a url",
            "relative/path",
            "example.com",
            ":8080",
            "mailto:a@example.com",
            "http://exa mple.com/",
            "http://example.com:port/",
            "http://[::1/",
            "/a%zz",
            "/a%4",
            "http://example.com/\n",
            "",
        ] {
            assert!(!parses_as_request_uri(bad), "{bad}");
        }
    }
}
