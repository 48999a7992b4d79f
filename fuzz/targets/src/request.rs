//! The request line: a path, its query parameters and headers resolved to a request's info; continue tokens.

use crate::{client_error, status_holds};
use apimachinery::status::ApiError;
use apimachinery::{parse_bool, FieldSelector, LabelSelector};
use endpoints::negotiate::negotiate;
use endpoints::request_info::{parse_query, RequestInfo};
use endpoints::table::IncludeObject;
use hyper::Method;
use registry::read::{ReadAt, WatchFrom};
use registry::store::{decode_continue, encode_continue};

const METHODS: [Method; 8] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::HEAD,
    Method::OPTIONS,
    Method::CONNECT,
];

/// A request: a method (the first byte), then `path?query`, then the Accept header on the next line. The request
/// info names what the path does; the query parameters and the Accept header are taken or refused as the handlers
/// take them, refusals being client errors.
pub fn request_info(data: &[u8]) {
    let Some((&m, rest)) = data.split_first() else { return };
    let method = &METHODS[m as usize % METHODS.len()];
    let text = String::from_utf8_lossy(rest);
    let mut lines = text.split('\n');
    let target = lines.next().unwrap_or("");
    let accept = lines.next();
    let (path, query) = target.split_once('?').map_or((target, None), |(p, q)| (p, Some(q)));
    let query = parse_query(query);
    let info = RequestInfo::resolve(method, path, &query);
    match &info.tenant {
        Some(t) => {
            assert!(info.path.starts_with('/'), "{path:?} -> {:?}", info.path);
            assert!(!t.is_empty() && !t.contains('/'), "{path:?}: tenant {t:?}");
        }
        None => assert_eq!(info.path, path),
    }
    if info.resource_request {
        assert!(info.api_prefix == "api" || info.api_prefix == "apis", "{info:?}");
        assert!(!info.version.is_empty() && !info.version.contains('/'), "{info:?}");
        assert!(
            !info.parts.is_empty() && info.parts.iter().all(|p| !p.is_empty() && !p.contains('/')),
            "{info:?}"
        );
        assert_eq!(info.resource, info.parts[0], "{info:?}");
        assert_eq!(info.name.as_ref(), info.parts.get(1), "{info:?}");
        assert_eq!(info.subresource.as_ref(), info.parts.get(2), "{info:?}");
        assert!(
            [
                "get",
                "list",
                "watch",
                "create",
                "update",
                "patch",
                "delete",
                "deletecollection",
                "unknown"
            ]
            .contains(&info.verb),
            "{info:?}"
        );
    } else {
        assert!(
            info.parts.is_empty() && info.name.is_none() && info.resource.is_empty(),
            "{info:?}"
        );
    }
    if let Some(selected) = &info.selected_name {
        assert!(info.name.is_none() && matches!(info.verb, "list" | "watch"), "{info:?}");
        assert!(!selected.is_empty() && !selected.contains('/'), "{info:?}");
    }
    assert_eq!(info.long_running(), info.resource_request && info.verb == "watch");
    let kind = info.metric_kind(method);
    assert_eq!(kind.resource, info.resource);
    let _ = info.authorized_name();

    // The query parameters of reads, as the handlers parse them.
    let q = |k: &str| query.get(k).map(String::as_str);
    let bool_param = |k: &str| -> Result<Option<bool>, ApiError> {
        match q(k).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => parse_bool(v)
                .map(Some)
                .ok_or_else(|| ApiError::bad_request(format!("invalid boolean for {k}: {v:?}"))),
        }
    };
    let check = |r: Result<(), ApiError>, what: &str| {
        if let Err(e) = r {
            client_error(&e, what)
        }
    };
    check(
        ReadAt::for_get(q("resourceVersion")).map(drop),
        "resourceVersion of a get",
    );
    let limit = q("limit").and_then(|l| l.parse::<i64>().ok()).unwrap_or(0).max(0) as usize;
    check(
        ReadAt::for_list(q("resourceVersion"), q("resourceVersionMatch"), limit).map(drop),
        "list options",
    );
    check(
        ReadAt::check_continue(q("resourceVersion"), q("resourceVersionMatch")),
        "continue options",
    );
    if let Some(token) = q("continue").filter(|t| !t.is_empty()) {
        check(decode_continue(token).map(drop), "continue");
    }
    match (bool_param("sendInitialEvents"), bool_param("allowWatchBookmarks")) {
        (Ok(send), Ok(bookmarks)) => check(
            WatchFrom::parse(
                q("resourceVersion"),
                q("resourceVersionMatch"),
                send,
                bookmarks.unwrap_or(false),
            )
            .map(drop),
            "watch options",
        ),
        (Err(e), _) | (_, Err(e)) => client_error(&e, "boolean parameter"),
    }
    if let Some(s) = q("labelSelector") {
        let _ = LabelSelector::parse(s);
    }
    if let Some(s) = q("fieldSelector") {
        let _ = FieldSelector::parse(s);
    }
    check(IncludeObject::parse(q("includeObject")).map(drop), "includeObject");
    for allow_table in [false, true] {
        match negotiate(accept, allow_table) {
            Ok(output) => {
                assert!(allow_table || output.table.is_none(), "{accept:?}");
                assert!(!output.content_type().is_empty());
            }
            Err(e) => {
                assert_eq!(e.code, 406, "{accept:?}: {e:?}");
                status_holds(&e);
            }
        }
    }
}

/// Continue tokens: a token is decoded or refused with 400; what decodes encodes back to a token that decodes the
/// same; any revision and key make a token that decodes to them.
pub fn continue_token(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match decode_continue(&text) {
        Ok((rv, start)) => {
            assert!(rv > 0 || rv == -1, "{text:?} decoded to revision {rv}");
            assert_eq!(decode_continue(&encode_continue(rv, &start)).ok(), Some((rv, start)));
        }
        Err(e) => {
            assert_eq!(e.code, 400, "{e:?}");
            status_holds(&e);
        }
    }
    let rv = data
        .get(..8)
        .map_or(7, |b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
        .checked_abs()
        .filter(|rv| *rv > 0)
        .unwrap_or(-1);
    let token = encode_continue(rv, &text);
    assert_eq!(decode_continue(&token).ok(), Some((rv, text.to_string())));
}
