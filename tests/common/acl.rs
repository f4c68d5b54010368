//! The ACL user docs/production.md gives a delayq application, read from the document itself so
//! that the tests run exactly what it says.

/// The documentation the rules are read from.
const PRODUCTION_DOC: &str = include_str!("../../docs/production.md");

/// The rules after `ACL SETUSER app` in docs/production.md's block, for the queue `name` and
/// the password `password`: every line without a topology, and the lines whose comment starts
/// with one of `topologies` (`"Cluster"`, `"Sentinel"`).
pub fn documented_acl(name: &str, password: &str, topologies: &[&str]) -> Vec<String> {
    let start = PRODUCTION_DOC
        .find("ACL SETUSER app ")
        .expect("docs/production.md has an ACL SETUSER app block");
    let block = &PRODUCTION_DOC[start..];
    let block = &block[..block.find("```").expect("the block ends")];
    let mut rules = Vec::new();
    for line in block.lines() {
        let (rules_part, comment) = match line.split_once('#') {
            Some((rules, comment)) => (rules, comment.trim()),
            None => (line, ""),
        };
        let topology = comment.split_once(':').map(|(t, _)| t.trim());
        let wanted = match topology {
            Some(t) if t == "Cluster" || t == "Sentinel" => topologies.contains(&t),
            _ => true,
        };
        if wanted {
            rules.extend(rules_part.split_whitespace().map(str::to_owned));
        }
    }
    assert_eq!(rules[..3], ["ACL", "SETUSER", "app"], "{block}");
    rules
        .split_off(3)
        .into_iter()
        .map(|rule| rule.replace("PASSWORD", password).replace("NAME", name))
        .collect()
}
