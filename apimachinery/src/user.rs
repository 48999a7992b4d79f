//! Who makes a request: the user an authenticator finds (`k8s.io/apiserver/pkg/authentication/user`), pure data
//! shared by authentication, authorization, admission and the plugin runtime, which tells plugins who is asking.

use std::collections::BTreeMap;

/// The user `system:anonymous`, for requests without credentials.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The group of anonymous requests.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// The group every authenticated user is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group whose members may do anything (kube's superuser group).
pub const MASTERS_GROUP: &str = "system:masters";
/// The user the server writes its own objects as (kube's `user.APIServerUser`).
pub const SYSTEM_APISERVER: &str = "system:apiserver";

/// An authenticated (or anonymous) user, as `k8s.io/apiserver/pkg/authentication/user.Info`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name, such as `alice` or `system:anonymous`.
    pub name: String,
    /// A unique id, when the authenticator knows one.
    pub uid: String,
    /// The groups the user is in.
    pub groups: Vec<String>,
    /// Extra attributes (such as scopes), by key.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with a name and groups.
    pub fn new(name: impl Into<String>, groups: impl IntoIterator<Item = impl Into<String>>) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.into_iter().map(Into::into).collect(),
            ..UserInfo::default()
        }
    }

    /// The anonymous user, in `system:unauthenticated`.
    pub fn anonymous() -> UserInfo {
        UserInfo::new(ANONYMOUS_USER, [UNAUTHENTICATED_GROUP])
    }

    /// Whether the user is in a group.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// The user with `system:authenticated` added (once), as every authenticated user has it.
    pub fn authenticated(mut self) -> UserInfo {
        if self.name != ANONYMOUS_USER && !self.in_group(AUTHENTICATED_GROUP) {
            self.groups.push(AUTHENTICATED_GROUP.to_owned());
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authenticated_users_join_system_authenticated_once() {
        let user = UserInfo::new("alice", ["dev"]).authenticated().authenticated();
        assert_eq!(user.groups, ["dev", AUTHENTICATED_GROUP]);
        assert!(!UserInfo::anonymous().authenticated().in_group(AUTHENTICATED_GROUP));
    }
}
