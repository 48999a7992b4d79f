//! Authentication: who is making a request.
//!
//! Authenticators (x509 client certificates, bearer tokens, JWTs, front-proxy headers, anonymous) each turn a
//! request into a [`UserInfo`], as `k8s.io/apiserver/pkg/authentication` does; the first that recognises the
//! request wins.

// Results that may fail with an `ApiError` (a whole Kubernetes `Status`) are large; errors are the rare path (see
// the same allowance in the binary crate).
#![allow(clippy::result_large_err)]

pub mod authenticator;
pub mod delegated;
pub mod jwt;
pub mod kubeconfig;
pub mod request_header;
pub mod service_accounts;
pub mod token_file;
pub mod x509;

pub use apimachinery::user::{
    UserInfo, ANONYMOUS_USER, AUTHENTICATED_GROUP, MASTERS_GROUP, SYSTEM_APISERVER, UNAUTHENTICATED_GROUP,
};
