use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::Parser;
use syn::{ItemFn, LitStr, Path};

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
    let block = &function.block;
    let body = if function.sig.asyncness.is_some() {
        match &args.bundle {
            Some(bundle) => quote!({
                ::metron::__private::profile_future_bundle!(#name, #bundle, async move #block).await
            }),
            None => {
                quote!({ ::metron::__private::profile_future!(#name, async move #block).await })
            }
        }
    } else {
        // A mixed-site name: the user's code cannot see or collide with the guard.
        let guard = syn::Ident::new("__metron_profile_guard", Span::mixed_site());
        let bundle = args.bundle.map(|b| quote!(, #b));
        quote!({
            let #guard = ::metron::__private::profile_scope!(#name #bundle);
            #block
        })
    };
    function.block = syn::parse2(body)?;
    Ok(quote!(#function))
}
