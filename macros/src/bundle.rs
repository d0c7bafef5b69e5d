use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields};

/// Which operations a field takes part in.
struct FieldOps {
    start: bool,
    stop: bool,
    sample: bool,
}

fn field_ops(field: &syn::Field) -> syn::Result<FieldOps> {
    let mut ops = FieldOps {
        start: true,
        stop: true,
        sample: true,
    };
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("bundle")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("no_start") {
                ops.start = false;
            } else if meta.path.is_ident("no_stop") {
                ops.stop = false;
            } else if meta.path.is_ident("no_sample") {
                ops.sample = false;
            } else {
                return Err(meta
                    .error("unknown bundle field option; accepted: no_start, no_stop, no_sample"));
            }
            Ok(())
        })?;
    }
    Ok(ops)
}

pub(crate) fn expand(input: DeriveInput) -> syn::Result<TokenStream> {
    let name = &input.ident;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "a metron Bundle cannot have generic parameters: its record layout must be fixed at compile time",
        ));
    }
    let fields = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => &named.named,
            Fields::Unnamed(_) => {
                return Err(syn::Error::new_spanned(
                    &data.fields,
                    "a metron Bundle must be a struct with named fields; tuple structs are not supported",
                ))
            }
            Fields::Unit => {
                return Err(syn::Error::new_spanned(
                    name,
                    "a metron Bundle needs at least one component field",
                ))
            }
        },
        Data::Enum(data) => {
            return Err(syn::Error::new_spanned(
                data.enum_token,
                "a metron Bundle must be a struct of components, not an enum",
            ))
        }
        Data::Union(data) => {
            return Err(syn::Error::new_spanned(
                data.union_token,
                "a metron Bundle must be a struct of components, not a union",
            ))
        }
    };
    if fields.is_empty() {
        return Err(syn::Error::new_spanned(
            name,
            "a metron Bundle needs at least one component field",
        ));
    }

    let mut infos = Vec::new();
    let mut starts = Vec::new();
    let mut stops = Vec::new();
    let mut samples = Vec::new();
    let mut writes = Vec::new();
    for field in fields {
        let ops = field_ops(field)?;
        let ident = field.ident.as_ref().expect("named field");
        let ty = &field.ty;
        let span = ty.span();
        let component = quote_spanned!(span=> <#ty as ::metron::__private::Component>);
        infos.push(quote_spanned!(span=> #component::INFO));
        if ops.start {
            starts.push(quote_spanned!(span=> #component::start(&mut self.#ident);));
        }
        if ops.stop {
            stops.push(quote_spanned!(span=> #component::stop(&mut self.#ident);));
        }
        if ops.sample {
            samples.push(quote_spanned!(span=> #component::sample(&mut self.#ident);));
        }
        writes.push(quote_spanned!(span=>
            let width = #component::FIELDS.len();
            #component::write_fields(&self.#ident, &mut out[at..at + width]);
            at += width;
        ));
    }

    let too_many = syn::LitStr::new(
        &format!(
            "the metron Bundle `{name}` has too many fields: a region record holds at most \
             metron::record::MAX_BUNDLE_WORDS f64 values; split it into smaller bundles"
        ),
        name.span(),
    );
    let size_check = quote_spanned!(name.span()=>
        const _: () = ::core::assert!(
            <#name as ::metron::__private::Bundle>::WORDS <= ::metron::__private::MAX_BUNDLE_WORDS,
            #too_many
        );
    );

    Ok(quote! {
        impl ::metron::__private::Bundle for #name {
            const COMPONENTS: &'static [::metron::__private::ComponentInfo] = &[#(#infos),*];
            const WORDS: usize = ::metron::__private::total_fields(Self::COMPONENTS);
            #[inline(always)]
            fn start(&mut self) { #(#starts)* }
            #[inline(always)]
            fn stop(&mut self) { #(#stops)* }
            #[inline(always)]
            fn sample(&mut self) { #(#samples)* }
            #[inline]
            fn write_fields(&self, out: &mut [f64]) {
                let mut at = 0usize;
                #(#writes)*
                let _ = at;
            }
        }
        #size_check
    })
}
