//! Which state a read may be served from: the API's resource version semantics for get, list and watch
//! (`resourceVersion`, `resourceVersionMatch`, `continue`, `sendInitialEvents`), checked as kube-apiserver checks
//! them, and where each is served from (the watch cache or storage).

use apimachinery::status::{ApiError, Cause};
use storage::Revision;

/// How fresh a read must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadAt {
    /// The latest state (`resourceVersion` unset): a consistent read.
    Latest,
    /// Any state (`resourceVersion="0"`): the cache's, however old.
    Any,
    /// A state at this revision or later (`resourceVersionMatch=NotOlderThan`).
    NotOlderThan(Revision),
    /// The state at exactly this revision (`resourceVersionMatch=Exact`, or a continue token's).
    Exact(Revision),
}

/// A parsed `resourceVersion` parameter: `None` when unset or empty.
fn parse_revision(rv: Option<&str>) -> Result<Option<Revision>, ApiError> {
    match rv.filter(|rv| !rv.is_empty()) {
        None => Ok(None),
        Some(rv) => match rv.parse::<Revision>() {
            Ok(revision) if revision >= 0 => Ok(Some(revision)),
            _ => Err(ApiError::bad_request(format!("invalid resource version: {rv:?}"))),
        },
    }
}

/// A 422 Invalid for `ListOptions`, as kube-apiserver answers invalid list options.
fn invalid_options(field: &str, reason: &str, message: String) -> ApiError {
    ApiError::invalid(
        "meta.k8s.io",
        "ListOptions",
        "",
        vec![Cause {
            reason: reason.into(),
            message,
            field: field.into(),
        }],
    )
}

impl ReadAt {
    /// "Not older than" a parsed `resourceVersion`: unset is the latest state, "0" any.
    fn not_older_than(revision: Option<Revision>) -> ReadAt {
        match revision {
            None => ReadAt::Latest,
            Some(0) => ReadAt::Any,
            Some(n) => ReadAt::NotOlderThan(n),
        }
    }

    /// The freshness of a get.
    pub fn for_get(rv: Option<&str>) -> Result<ReadAt, ApiError> {
        Ok(ReadAt::not_older_than(parse_revision(rv)?))
    }

    /// The freshness of a list (not a continued one: see [`ReadAt::check_continue`]). Without
    /// `resourceVersionMatch`, a non-zero `resourceVersion` means "not older than", or "exact" when the list is
    /// paginated, as in Kubernetes.
    pub fn for_list(rv: Option<&str>, rv_match: Option<&str>, limit: usize) -> Result<ReadAt, ApiError> {
        let revision = parse_revision(rv)?;
        let rv_match = rv_match.filter(|m| !m.is_empty());
        Ok(match (rv_match, revision) {
            (Some(_), None) => {
                return Err(invalid_options(
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".into(),
                ))
            }
            (Some("NotOlderThan"), Some(0)) | (None, Some(0)) => ReadAt::Any,
            (Some("NotOlderThan"), Some(n)) => ReadAt::NotOlderThan(n),
            (Some("Exact"), Some(0)) => {
                return Err(invalid_options(
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"".into(),
                ))
            }
            (Some("Exact"), Some(n)) => ReadAt::Exact(n),
            (Some(other), Some(_)) => {
                return Err(invalid_options(
                    "resourceVersionMatch",
                    "FieldValueNotSupported",
                    format!("Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""),
                ))
            }
            (None, Some(n)) if limit > 0 => ReadAt::Exact(n),
            (None, Some(n)) => ReadAt::NotOlderThan(n),
            (None, None) => ReadAt::Latest,
        })
    }

    /// Checks the parameters that may come with a continue token: no `resourceVersion` (but "0") and no
    /// `resourceVersionMatch`.
    pub fn check_continue(rv: Option<&str>, rv_match: Option<&str>) -> Result<(), ApiError> {
        if rv_match.is_some_and(|m| !m.is_empty()) {
            return Err(invalid_options(
                "resourceVersionMatch",
                "FieldValueForbidden",
                "Forbidden: resourceVersionMatch is forbidden when continue is provided".into(),
            ));
        }
        if rv.is_some_and(|rv| !rv.is_empty() && rv != "0") {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        Ok(())
    }
}

/// Where a watch starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchFrom {
    /// First the current objects as ADDED events, read at this freshness, then the changes after them. With
    /// `initial_events_end`, a BOOKMARK annotated `k8s.io/initial-events-end` follows the current objects.
    Initial {
        /// How fresh the current objects must be.
        at: ReadAt,
        /// Whether to mark the end of the initial events (`sendInitialEvents=true`).
        initial_events_end: bool,
    },
    /// The changes after the latest revision.
    Now,
    /// The changes after this revision.
    After(Revision),
}

impl WatchFrom {
    /// Where a watch starts, from its parameters, checked as kube-apiserver checks them.
    pub fn parse(
        rv: Option<&str>,
        rv_match: Option<&str>,
        send_initial_events: Option<bool>,
        allow_bookmarks: bool,
    ) -> Result<WatchFrom, ApiError> {
        let revision = parse_revision(rv)?;
        let rv_match = rv_match.filter(|m| !m.is_empty());
        match send_initial_events {
            None => {
                if rv_match.is_some() {
                    return Err(invalid_options(
                        "resourceVersionMatch",
                        "FieldValueForbidden",
                        "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
                            .into(),
                    ));
                }
                Ok(match revision {
                    Some(n) if n > 0 => WatchFrom::After(n),
                    _ => WatchFrom::Initial {
                        at: ReadAt::not_older_than(revision),
                        initial_events_end: false,
                    },
                })
            }
            Some(send) => {
                if rv_match != Some("NotOlderThan") {
                    return Err(invalid_options(
                        "resourceVersionMatch",
                        "FieldValueForbidden",
                        "Forbidden: sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to \
                         \"NotOlderThan\""
                            .into(),
                    ));
                }
                if send && !allow_bookmarks {
                    return Err(invalid_options(
                        "allowWatchBookmarks",
                        "FieldValueForbidden",
                        "Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true".into(),
                    ));
                }
                Ok(match (send, revision) {
                    (true, _) => WatchFrom::Initial {
                        at: ReadAt::not_older_than(revision),
                        initial_events_end: true,
                    },
                    (false, None | Some(0)) => WatchFrom::Now,
                    (false, Some(n)) => WatchFrom::After(n),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_semantics_follow_kubernetes() {
        let cases: [(Option<&str>, Option<&str>, usize, ReadAt); 8] = [
            (None, None, 0, ReadAt::Latest),
            (Some(""), None, 5, ReadAt::Latest),
            (Some("0"), None, 5, ReadAt::Any),
            (Some("7"), None, 0, ReadAt::NotOlderThan(7)),
            (Some("7"), None, 5, ReadAt::Exact(7)),
            (Some("7"), Some("NotOlderThan"), 5, ReadAt::NotOlderThan(7)),
            (Some("0"), Some("NotOlderThan"), 0, ReadAt::Any),
            (Some("7"), Some("Exact"), 0, ReadAt::Exact(7)),
        ];
        for (rv, m, limit, want) in cases {
            assert_eq!(ReadAt::for_list(rv, m, limit), Ok(want), "{rv:?} {m:?} {limit}");
        }
    }

    #[test]
    fn bad_list_options_are_refused_with_the_right_code() {
        let code = |r: Result<ReadAt, ApiError>| r.map_err(|e| e.code).err();
        assert_eq!(code(ReadAt::for_list(Some("x"), None, 0)), Some(400));
        assert_eq!(code(ReadAt::for_list(Some("-1"), None, 0)), Some(400));
        assert_eq!(code(ReadAt::for_list(None, Some("Exact"), 0)), Some(422));
        assert_eq!(code(ReadAt::for_list(Some("0"), Some("Exact"), 0)), Some(422));
        assert_eq!(code(ReadAt::for_list(Some("3"), Some("Newest"), 0)), Some(422));
        assert!(ReadAt::check_continue(Some("0"), None).is_ok());
        assert_eq!(
            ReadAt::check_continue(Some("5"), None).map_err(|e| e.code).err(),
            Some(400)
        );
        assert_eq!(
            ReadAt::check_continue(None, Some("Exact")).map_err(|e| e.code).err(),
            Some(422)
        );
    }

    #[test]
    fn watch_semantics_follow_kubernetes() {
        let initial = |at| WatchFrom::Initial {
            at,
            initial_events_end: false,
        };
        assert_eq!(WatchFrom::parse(None, None, None, false), Ok(initial(ReadAt::Latest)));
        assert_eq!(WatchFrom::parse(Some("0"), None, None, true), Ok(initial(ReadAt::Any)));
        assert_eq!(WatchFrom::parse(Some("9"), None, None, true), Ok(WatchFrom::After(9)));
        assert_eq!(
            WatchFrom::parse(Some("9"), Some("NotOlderThan"), Some(true), true),
            Ok(WatchFrom::Initial {
                at: ReadAt::NotOlderThan(9),
                initial_events_end: true
            })
        );
        assert_eq!(
            WatchFrom::parse(None, Some("NotOlderThan"), Some(false), false),
            Ok(WatchFrom::Now)
        );
        let code = |r: Result<WatchFrom, ApiError>| r.map_err(|e| e.code).err();
        assert_eq!(code(WatchFrom::parse(None, None, Some(true), true)), Some(422));
        assert_eq!(
            code(WatchFrom::parse(None, Some("NotOlderThan"), Some(true), false)),
            Some(422)
        );
        assert_eq!(code(WatchFrom::parse(Some("3"), Some("Exact"), None, true)), Some(422));
    }
}
