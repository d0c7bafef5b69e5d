use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::Parser;
use syn::{ItemFn, LitStr, Path, Stmt};

struct ProfileArgs {
    name: Option<LitStr>,
    bundle: Option<Path>,
}

fn parse_args(args: TokenStream) -> syn::Result<ProfileArgs> {
    let mut parsed = ProfileArgs {
        name: None,
        bundle: None,
    };
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            parsed.name = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("bundle") {
            parsed.bundle = Some(meta.value()?.parse()?);
        } else {
            return Err(
                meta.error("unknown #[profile] argument; accepted: name = \"text\", bundle = Type")
            );
        }
        Ok(())
    });
    parser.parse2(args)?;
    Ok(parsed)
}

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let args = parse_args(args)?;
    let mut function: ItemFn = syn::parse2(item).map_err(|e| {
        syn::Error::new(
            e.span(),
            "#[metron::profile] goes on a function or method with a body",
        )
    })?;
    let name = args
        .name
        .unwrap_or_else(|| LitStr::new(&function.sig.ident.to_string(), function.sig.ident.span()));
    if function.sig.asyncness.is_some() {
        // The body must become a future of its own, so it stays a block (an `async move`
        // block, whose braces are needed): each poll of it is a region.
        let block = &function.block;
        let body = match &args.bundle {
            Some(bundle) => quote!({
                ::metron::__private::profile_future_bundle!(#name, #bundle, async move #block).await
            }),
            None => {
                quote!({ ::metron::__private::profile_future!(#name, async move #block).await })
            }
        };
        function.block = syn::parse2(body)?;
    } else {
        // A mixed-site name: the user's code cannot see or collide with the guard.
        let guard = syn::Ident::new("__metron_profile_guard", Span::mixed_site());
        let bundle = args.bundle.map(|b| quote!(, #b));
        let enter: Stmt = syn::parse2(quote! {
            let #guard = ::metron::__private::profile_scope!(#name #bundle);
        })?;
        // The guard's statement is spliced into the user's block rather than the block nested
        // after it: a nested block as the tail expression makes rustc report `unused_braces` at
        // the user's braces. It goes after the block's leading items (which run nothing), so
        // `clippy::items_after_statements` sees the user's order unchanged.
        let stmts = &mut function.block.stmts;
        let items = stmts
            .iter()
            .take_while(|stmt| matches!(stmt, Stmt::Item(_)))
            .count();
        let rest = stmts.split_off(items);
        stmts.push(enter);
        stmts.extend(rest);
    }
    Ok(quote!(#function))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(stmts: &[Stmt]) -> Vec<String> {
        stmts.iter().map(|s| quote!(#s).to_string()).collect()
    }

    #[test]
    fn the_guard_is_spliced_into_the_body_after_its_leading_items() {
        let user: ItemFn = syn::parse_quote! {
            fn f(n: u64) -> u64 {
                #![allow(unused)]
                use std::mem;
                fn g() {}
                let x = n;
                if x < 2 { x } else { x - 1 }
            }
        };
        let expanded = expand(quote!(), quote!(#user)).unwrap();
        // The inner attribute stays first in the body.
        assert!(
            expanded
                .to_string()
                .contains("{ # ! [allow (unused)] use std :: mem ;"),
            "{expanded}"
        );
        let out: ItemFn = syn::parse2(expanded).unwrap();
        let (stmts, user_stmts) = (tokens(&out.block.stmts), tokens(&user.block.stmts));
        // The user's statements, unchanged and not nested in a block, with the guard's
        // statement between the leading items and the first statement that runs.
        assert_eq!(stmts.len(), user_stmts.len() + 1, "{stmts:#?}");
        assert_eq!(stmts[..2], user_stmts[..2]);
        assert!(
            stmts[2].starts_with(
                "let __metron_profile_guard = :: metron :: __private :: profile_scope ! (\"f\")"
            ),
            "{}",
            stmts[2]
        );
        assert_eq!(stmts[3..], user_stmts[2..]);
    }

    #[test]
    fn an_async_body_becomes_a_future_polled_inside_a_region() {
        let out = expand(
            quote!(name = "n"),
            quote!(
                async fn f() -> u8 {
                    1
                }
            ),
        );
        let out = out.unwrap().to_string();
        assert!(
            out.contains(
                "{ :: metron :: __private :: profile_future ! (\"n\" , async move { 1 }) . await }"
            ),
            "{out}"
        );
    }
}
