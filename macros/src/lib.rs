//! Procedural macros of Metron. Use them through the `metron` crate
//! (`#[derive(metron::Bundle)]`, `#[metron::profile]`); the generated code names only
//! `::metron::__private::*`.

mod bundle;
mod profile;

use proc_macro::TokenStream;

/// Composes components into a bundle: `start`/`stop`/`sample` call each field's operation in
/// field order.
///
/// Every field must be a `metron::Component`. A field attribute excludes it from operations:
/// `#[bundle(no_start)]`, `#[bundle(no_stop)]`, `#[bundle(no_sample)]` (combinable:
/// `#[bundle(no_start, no_stop)]`). Only structs with named fields and no generic parameters
/// are accepted; the bundle's record size is checked against the storage slot at compile time.
#[proc_macro_derive(Bundle, attributes(bundle))]
pub fn derive_bundle(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    bundle::expand(input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Records every call of a function as a region named after it.
///
/// Arguments (all optional): `name = "text"` (default: the function's name) and
/// `bundle = Type` (default: wall clock only). On an `async fn`, each poll of the future is one
/// region on the thread that polls it, so time spent suspended is not counted and a task that
/// moves between threads never leaves a region open on the wrong thread.
///
/// The body is not wrapped: one statement, `let <guard> = metron::scope!(name);` under a
/// mixed-site name, goes before its first statement (after its leading items), so no lint fires
/// in the user's code. An `async fn`'s body becomes `async move { body }` inside the per-poll
/// future, awaited at once.
#[proc_macro_attribute]
pub fn profile(args: TokenStream, item: TokenStream) -> TokenStream {
    profile::expand(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
