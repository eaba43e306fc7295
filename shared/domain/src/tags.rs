//! Entity tags a poll is answered from without building its answer. A tag names what an answer
//! was built from (which read, for whom, which page) and the version of the data it read; the
//! same inputs give the same tag, so a server compares a client's `If-None-Match` with the tag
//! of the version it holds now, one cheap read, instead of building the answer to digest it.
//!
//! - A finalised packet's view never changes: its tag is [`finalised`], checked with no read.
//! - An open packet's view changes with its live version (every grab, close, cancel, freeze,
//!   re-sync) and with its expiry by time alone: [`versioned`] with both.
//! - A user's wallet changes with each movement: [`versioned`] with the balance's move count.
//!
//! Each is SHA-256 of its inputs, one per line ([`ANSWERS_SHAPE`] first), the first 128 bits in
//! hex, quoted, after a letter saying which kind it is (`f`, `v`); a content digest
//! (`http::conditional`) has none.

use sha2::{Digest, Sha256};

/// What an answer was built for: the read, whose answer it is (a user, or `*` for everyone)
/// and which page (its query, as the server read it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagScope<'a> {
    /// The read: `view`, `shared`, `wallet`.
    pub read: &'a str,
    /// The subject: a packet's id, a user's.
    pub subject: &'a str,
    /// Whose answer: the caller, or `*` for one every caller shares.
    pub viewer: &'a str,
    /// The page: its parameters as the server parsed them.
    pub page: &'a str,
}

/// The answers' shape the tags are of: a deploy that changes what an answer holds bumps it, so
/// no tag given before names an answer of the new shape (a finalised view's tag is otherwise
/// good for ever).
pub const ANSWERS_SHAPE: u32 = 1;

/// The tag of an answer that never changes (a finalised packet's view).
pub fn finalised(scope: &TagScope<'_>) -> String {
    tag('f', scope, "final")
}

/// The tag of an answer built from the data at `version`.
pub fn versioned(scope: &TagScope<'_>, version: &str) -> String {
    tag('v', scope, version)
}

fn tag(kind: char, scope: &TagScope<'_>, version: &str) -> String {
    let text =
        format!("{ANSWERS_SHAPE}\n{}\n{}\n{}\n{}\n{version}\n", scope.read, scope.subject, scope.viewer, scope.page);
    format!("\"{kind}{}\"", hex::encode(&Sha256::digest(text.as_bytes())[..16]))
}

/// True when an `If-None-Match` value names `tag`: one of its comma-separated tags, weak or
/// strong (RFC 9110's weak comparison), or `*` (any answer there is).
pub fn named_in(if_none_match: &str, tag: &str) -> bool {
    lists(if_none_match, tag) || if_none_match.split(',').any(|candidate| candidate.trim() == "*")
}

/// True when an `If-None-Match` value lists `tag` itself, weak or strong: what a check made
/// before the answer is known to exist goes by (`*` says nothing of a version).
pub fn lists(if_none_match: &str, tag: &str) -> bool {
    if_none_match
        .split(',')
        .map(|candidate| candidate.trim().trim_start_matches("W/"))
        .any(|candidate| candidate == tag)
}

/// True when an `If-None-Match` value lists a version's tag (`v…`), weak or strong: only then can
/// a version read answer it; a digest or a finalised tag never matches one.
pub fn lists_a_version(if_none_match: &str) -> bool {
    if_none_match.split(',').any(|candidate| candidate.trim().trim_start_matches("W/").starts_with("\"v"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_tag_is_told_from_a_digest_and_a_final_tag() {
        let version = versioned(&SCOPE, "3|100|0");
        assert!(lists_a_version(&version) && lists_a_version(&format!("\"0123\", W/{version}")));
        assert!(!lists_a_version(&finalised(&SCOPE)));
        assert!(!lists_a_version("\"0123456789abcdef0123456789abcdef\", *"));
    }

    const SCOPE: TagScope<'static> = TagScope { read: "shared", subject: "p1", viewer: "*", page: "1" };

    #[test]
    fn a_tag_follows_every_input_and_only_them() {
        let base = versioned(&SCOPE, "open|3|x");
        assert_eq!(base, versioned(&SCOPE, "open|3|x"));
        assert_ne!(base, versioned(&SCOPE, "open|4|x"));
        assert_ne!(base, versioned(&TagScope { page: "1001", ..SCOPE }, "open|3|x"));
        assert_ne!(base, versioned(&TagScope { viewer: "bob", ..SCOPE }, "open|3|x"));
        assert_ne!(base, versioned(&TagScope { read: "view", ..SCOPE }, "open|3|x"));
        assert_ne!(finalised(&SCOPE), finalised(&TagScope { subject: "p2", ..SCOPE }));
        assert!(finalised(&SCOPE).starts_with("\"f") && base.starts_with("\"v") && base.len() == 35);
    }

    #[test]
    fn if_none_match_names_a_tag_weakly_strongly_or_by_star() {
        let tag = finalised(&SCOPE);
        assert!(named_in(&tag, &tag));
        assert!(named_in(&format!("\"other\", W/{tag}"), &tag));
        assert!(named_in("*", &tag) && !lists("*", &tag));
        assert!(!named_in("\"other\"", &tag));
    }
}
