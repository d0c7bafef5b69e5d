//! `#[metron::profile]` makes no lint fire in the user's code: every function shape below
//! compiles with every warning denied (and a few allow-by-default lints that crates often deny).
//! `tests/tests/profile_shapes.rs` compiles this file too (clippy included) and runs `main`.

#![deny(warnings, rust_2018_idioms, unused_qualifications, let_underscore_drop)]
// Checked when clippy compiles `tests/tests/profile_expansion.rs` (rustc ignores them).
#![deny(clippy::all, clippy::pedantic)]

use std::fmt::Debug;
use std::future::Future;
use std::num::ParseIntError;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};

// Bodies written on one line are where nesting the user's block inside the
// expansion made rustc report `unused_braces`; rustfmt would spread them over several lines.

/// A function whose tail is an `if`/`else` whose branches are blocks.
#[metron::profile]
#[rustfmt::skip]
fn fib(n: u64) -> u64 { if n < 2 { n } else { fib(n - 1) + fib(n - 2) } }

#[metron::profile]
#[rustfmt::skip]
fn expression_body(a: u32, b: u32) -> u32 { a * b }

#[metron::profile]
#[rustfmt::skip]
fn one_line_unit(v: &mut Vec<u32>) { v.clear() }

#[metron::profile]
fn multi_line_if(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        n - 1
    }
}

#[metron::profile]
fn block_tail(a: u32) -> u32 {
    match a {
        0 => 1,
        _ => a,
    }
}

#[metron::profile]
fn unit_empty() {}

#[metron::profile]
fn unit_statements(v: &mut Vec<u32>) {
    v.push(1);
    v.push(2);
}

#[metron::profile]
fn early_return(x: i32) -> i32 {
    if x < 0 {
        let _inner = metron::scope!("before return");
        return -x;
    }
    x
}

#[metron::profile]
fn question_mark(text: &str) -> Result<u32, ParseIntError> {
    let _inner = metron::scope!("before ?");
    let n: u32 = text.parse()?;
    Ok(n + 1)
}

#[metron::profile(name = "renamed")]
fn with_name() -> &'static str {
    "x"
}

#[derive(metron::Bundle, Default)]
struct Cpu {
    cpu: metron::components::ThreadCpuClock,
}

#[metron::profile(name = "with bundle", bundle = Cpu)]
#[rustfmt::skip]
fn with_bundle(x: u32) -> u32 { if x > 1 { x } else { 1 } }

#[metron::profile(bundle = Cpu)]
async fn async_with_bundle(items: impl IntoIterator<Item = u32>) -> u32 {
    items.into_iter().sum()
}

#[metron::profile]
fn generic<T, U>(t: T, u: U) -> (T, U)
where
    T: Clone + Debug,
    U: Into<u64> + Copy,
{
    (t, u)
}

#[metron::profile]
fn lifetimes_and_consts<'a, const N: usize>(words: [&'a str; N], fallback: &'a str) -> &'a str {
    words.first().copied().unwrap_or(fallback)
}

#[metron::profile]
fn impl_trait(items: impl IntoIterator<Item = u32>) -> impl Iterator<Item = u32> {
    items.into_iter().map(|x| x * 2)
}

#[metron::profile]
fn patterns((a, b): (u32, u32), mut c: u32) -> u32 {
    c += a + b;
    c
}

#[metron::profile]
#[inline]
#[must_use]
fn attributes(x: u32) -> u32 {
    x + 1
}

#[metron::profile]
#[allow(clippy::needless_return)]
fn with_allow(x: u32) -> u32 {
    return x;
}

#[metron::profile]
fn inner_attribute(x: u32) -> u32 {
    #![allow(unused_variables)]
    let unused = 3;
    x
}

/// # Safety
/// `p` points to a readable `u32`.
#[metron::profile]
unsafe fn unsafe_fn(p: *const u32) -> u32 {
    // SAFETY: the caller promises that `p` points to a readable `u32`.
    unsafe { *p }
}

#[metron::profile]
extern "C" fn extern_c(x: u32) -> u32 {
    x
}

#[metron::profile]
fn items_in_body(x: u32) -> u32 {
    use std::collections::BTreeMap;
    const OFFSET: u32 = 10;
    const fn helper(v: u32) -> u32 {
        v + OFFSET
    }
    struct Local(u32);
    macro_rules! double {
        ($e:expr) => {
            $e * 2
        };
    }
    let mut map = BTreeMap::new();
    map.insert(x, Local(helper(x)));
    double!(map[&x].0)
}

#[metron::profile]
fn labeled_loops(limit: u32) -> u32 {
    let mut total = 0;
    'outer: for i in 0..limit {
        for j in 0..limit {
            if i * j > 6 {
                break 'outer;
            }
            total += j;
        }
    }
    let mut n = 0;
    let found = 'search: loop {
        n += 1;
        if n * n > total {
            break 'search n;
        }
    };
    'block: {
        if found > 100 {
            break 'block 0;
        }
        found
    }
}

#[metron::profile]
fn let_else(text: &str) -> u32 {
    let Ok(n) = text.parse::<u32>() else {
        return 0;
    };
    n
}

#[metron::profile]
fn closure_tail(offset: u32) -> impl Fn(u32) -> u32 {
    move |x| x + offset
}

#[metron::profile]
fn diverges(code: i32) -> ! {
    std::process::exit(code)
}

struct Counter {
    n: u64,
}

impl Counter {
    #[metron::profile]
    fn new() -> Self {
        Self { n: 0 }
    }

    #[metron::profile]
    #[rustfmt::skip]
    fn get(&self) -> u64 { self.n }

    #[metron::profile]
    fn bump(&mut self) -> &mut Self {
        self.n += 1;
        self
    }

    #[metron::profile]
    fn into_inner(self) -> u64 {
        self.n
    }

    #[metron::profile]
    #[allow(clippy::boxed_local)] // the receiver is the shape under test
    fn boxed(self: Box<Self>) -> u64 {
        self.n
    }

    #[metron::profile]
    async fn async_method(&self, by: u64) -> u64 {
        self.n + by
    }
}

trait Shape {
    fn area(&self) -> u64;

    #[metron::profile]
    fn double_area(&self) -> u64 {
        self.area() * 2
    }
}

impl Shape for Counter {
    #[metron::profile]
    fn area(&self) -> u64 {
        self.n * self.n
    }
}

#[metron::profile]
async fn async_plain(x: u32) -> u32 {
    x + 1
}

#[metron::profile]
async fn async_question_mark(text: &str) -> Result<u32, ParseIntError> {
    let n: u32 = text.parse()?;
    if n == 0 {
        return Ok(0);
    }
    Ok(n)
}

#[metron::profile]
async fn async_generic<T>(value: T) -> T
where
    T: Clone + Send,
{
    YieldOnce(false).await;
    value.clone()
}

#[metron::profile]
async fn async_unit() {}

/// Pending at its first poll, ready at the second.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

/// Polls `future` to completion on this thread.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// Calls every shape once (`fib(4)`: 9 calls; `async_generic`: 2 polls).
pub fn main() {
    assert_eq!(fib(4), 3);
    assert_eq!(expression_body(6, 7), 42);
    let mut cleared = vec![1];
    one_line_unit(&mut cleared);
    assert!(cleared.is_empty());
    assert_eq!(multi_line_if(5), 4);
    assert_eq!(block_tail(0), 1);
    unit_empty();
    let mut v = Vec::new();
    unit_statements(&mut v);
    assert_eq!(v, [1, 2]);
    assert_eq!(early_return(-3), 3);
    assert!(question_mark("x").is_err());
    assert_eq!(with_name(), "x");
    assert_eq!(with_bundle(3), 3);
    assert_eq!(block_on(async_with_bundle([1, 2])), 3);
    assert_eq!(generic("a", 1u8), ("a", 1));
    assert_eq!(lifetimes_and_consts(["a", "b"], "c"), "a");
    assert_eq!(impl_trait([1, 2]).sum::<u32>(), 6);
    assert_eq!(patterns((1, 2), 3), 6);
    assert_eq!(attributes(1), 2);
    assert_eq!(with_allow(4), 4);
    assert_eq!(inner_attribute(5), 5);
    let value = 9;
    // SAFETY: `value` is a live `u32`.
    assert_eq!(unsafe { unsafe_fn(std::ptr::from_ref(&value)) }, 9);
    assert_eq!(extern_c(8), 8);
    assert_eq!(items_in_body(1), 22);
    assert_eq!(labeled_loops(4), 5);
    assert_eq!(let_else("7"), 7);
    assert_eq!(closure_tail(1)(1), 2);
    let mut counter = Counter::new();
    assert_eq!(counter.bump().get(), 1);
    assert_eq!(counter.double_area(), 2);
    assert_eq!(block_on(counter.async_method(2)), 3);
    assert_eq!(Box::new(Counter::new()).boxed(), 0);
    assert_eq!(counter.into_inner(), 1);
    assert_eq!(block_on(async_plain(1)), 2);
    assert_eq!(block_on(async_question_mark("5")), Ok(5));
    assert_eq!(block_on(async_generic("g")), "g");
    block_on(async_unit());
    if std::env::var_os("METRON_TEST_NEVER_SET").is_some() {
        diverges(1);
    }
}
