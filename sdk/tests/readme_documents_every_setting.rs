//! The README's settings tables must list every setting of the registry, so a user who reads
//! the README sees everything `metron avail` prints.

#[test]
fn every_registered_setting_is_documented_in_the_readme() {
    let readme = include_str!("../../README.md");
    let missing: Vec<&str> = metron::settings::REGISTRY
        .iter()
        .map(|s| s.name)
        .filter(|name| !readme.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md does not document: {missing:?}"
    );
}
