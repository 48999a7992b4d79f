//! Static bearer tokens from `--token-auth-file`, in kube-apiserver's CSV format: `token,user,uid,"group1,group2"`
//! (the groups column is optional; more columns are ignored).

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context as _;

use super::UserInfo;

/// The tokens of a token file.
#[derive(Clone, Debug, Default)]
pub struct TokenFile {
    users: HashMap<String, UserInfo>,
}

impl TokenFile {
    /// Reads a token file. Errors name the file and the line.
    pub fn load(path: &Path) -> anyhow::Result<TokenFile> {
        let text = std::fs::read(path).with_context(|| format!("reading the token file {}", path.display()))?;
        TokenFile::parse(&text).with_context(|| format!("in the token file {}", path.display()))
    }

    /// Parses the CSV text of a token file.
    pub fn parse(text: &[u8]) -> anyhow::Result<TokenFile> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::All)
            .comment(Some(b'#'))
            .from_reader(text);
        let mut users = HashMap::new();
        for (i, record) in reader.records().enumerate() {
            let record = record.with_context(|| format!("line {}", i + 1))?;
            let line = record.position().map(|p| p.line()).unwrap_or(i as u64 + 1);
            if record.len() == 1 && record[0].is_empty() {
                continue;
            }
            if record.len() < 3 {
                anyhow::bail!(
                    "line {line}: expected token,user,uid[,\"group1,group2\"], found {} columns",
                    record.len()
                );
            }
            let (token, name, uid) = (&record[0], &record[1], &record[2]);
            if token.is_empty() || name.is_empty() {
                anyhow::bail!("line {line}: the token and the user name must not be empty");
            }
            let groups = record
                .get(3)
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|g| !g.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let user = UserInfo {
                name: name.to_owned(),
                uid: uid.to_owned(),
                groups,
                ..UserInfo::default()
            };
            if users.insert(token.to_owned(), user).is_some() {
                tracing::warn!(line, "the token file names a token twice; the last line wins");
            }
        }
        Ok(TokenFile { users })
    }

    /// The user of a token, if it is one of the file's.
    pub fn authenticate(&self, token: &str) -> Option<&UserInfo> {
        self.users.get(token)
    }

    /// How many tokens the file has.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Whether the file has no tokens.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_users_with_uids_and_quoted_groups() {
        let file = TokenFile::parse(
            b"# comment\nsecret1,alice,uid-1,\"dev,ops\"\nsecret2, bob ,uid-2\n\nsecret3,carol,uid-3,admins,ignored\n",
        )
        .unwrap();
        assert_eq!(file.len(), 3);
        let alice = file.authenticate("secret1").unwrap();
        assert_eq!((alice.name.as_str(), alice.uid.as_str()), ("alice", "uid-1"));
        assert_eq!(alice.groups, ["dev", "ops"]);
        assert_eq!(file.authenticate("secret2").unwrap().name, "bob");
        assert!(file.authenticate("secret2").unwrap().groups.is_empty());
        assert_eq!(file.authenticate("secret3").unwrap().groups, ["admins"]);
        assert!(file.authenticate("nope").is_none());
    }

    #[test]
    fn short_lines_and_empty_names_are_errors_naming_the_line() {
        let err = TokenFile::parse(b"ok,alice,1\nbad,bob\n").unwrap_err();
        assert!(format!("{err:#}").contains("line 2"), "{err:#}");
        let err = TokenFile::parse(b"tok,,1\n").unwrap_err();
        assert!(format!("{err:#}").contains("must not be empty"), "{err:#}");
    }
}
