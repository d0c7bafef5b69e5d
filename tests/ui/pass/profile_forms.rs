//! `#[metron::profile]` on functions, methods and async fns, with `name =` and `bundle =`.

use metron::components::ThreadCpuClock;

#[derive(metron::Bundle, Default)]
struct Cpu {
    cpu: ThreadCpuClock,
}

#[metron::profile]
fn plain(x: u32) -> u32 {
    x + 1
}

#[metron::profile(name = "custom name")]
fn named() {}

#[metron::profile(bundle = Cpu)]
fn with_bundle() -> &'static str {
    "done"
}

#[metron::profile(name = "both", bundle = Cpu)]
fn both<T: Clone>(value: &T) -> T {
    value.clone()
}

#[metron::profile]
fn early_return(x: i32) -> Result<i32, String> {
    if x < 0 {
        return Err("negative".into());
    }
    let guard = 3; // a user variable may share the guard's name without clashing
    Ok(x + guard)
}

struct Solver {
    n: u64,
}

impl Solver {
    #[metron::profile]
    fn method(&self) -> u64 {
        self.n
    }

    #[metron::profile(name = "Solver::mutate")]
    fn mutate(&mut self) {
        self.n += 1;
    }

    #[metron::profile]
    fn associated() -> Solver {
        Solver { n: 0 }
    }
}

#[metron::profile]
async fn plain_async(x: u32) -> u32 {
    x * 2
}

#[metron::profile(name = "async with bundle", bundle = Cpu)]
async fn async_with_bundle(s: &str) -> usize {
    plain_async(1).await as usize + s.len()
}

fn main() {
    assert_eq!(plain(1), 2);
    named();
    assert_eq!(with_bundle(), "done");
    assert_eq!(both(&7), 7);
    assert_eq!(early_return(1), Ok(4));
    assert!(early_return(-1).is_err());
    let mut s = Solver::associated();
    s.mutate();
    assert_eq!(s.method(), 1);
    let _f = async_with_bundle("abc");
}
