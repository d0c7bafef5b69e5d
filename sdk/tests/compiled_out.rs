//! With the `enabled` feature off (`cargo test -p metron --no-default-features`), every macro
//! still parses and type-checks its arguments but records nothing and costs nothing.
#![cfg(not(feature = "enabled"))]

use metron::components::ThreadCpuClock;

#[derive(Default, metron::Bundle)]
struct Cpu {
    cpu: ThreadCpuClock,
}

#[metron::profile]
fn profiled(x: u64) -> u64 {
    x + 1
}

#[metron::profile(bundle = Cpu)]
async fn profiled_async() -> u32 {
    7
}

#[test]
fn guards_are_zero_sized_and_nothing_is_recorded() {
    assert_eq!(std::mem::size_of_val(&metron::scope!("a")), 0);
    assert_eq!(std::mem::size_of_val(&metron::scope!("b", Cpu)), 0);
    let region = metron::begin!("c");
    assert_eq!(std::mem::size_of_val(&region), 0);
    region.end();
    let mut evaluated = false;
    metron::counter!("n", {
        evaluated = true;
        1
    });
    metron::annotate!("k", "v");
    metron::mark!("m");
    assert!(
        !evaluated,
        "a compiled-out counter must not evaluate its value"
    );
    assert_eq!(profiled(1), 2);
    drop(profiled_async());
    assert!(!metron::collecting());
    let out = std::env::temp_dir().join(format!("metron-compiled-out-{}", std::process::id()));
    std::env::set_var("METRON_OUTPUT_PATH", &out);
    assert!(metron::finish().is_none());
    assert!(
        !out.exists(),
        "nothing may be written when instrumentation is compiled out"
    );
}
