//! `#[guarded]`: wraps the body of every Python entry point (a
//! `#[pyfunction]`, or each method of a `#[pymethods]` block) in
//! `crate::errors::guard`, which turns a Rust panic into a Python
//! `RuntimeError` naming the function instead of letting PyO3 raise its
//! `PanicException` (a `BaseException` that ordinary `except Exception`
//! handlers do not catch).
//!
//! A function returning `PyResult<T>` keeps its signature; one returning a
//! plain `T` is turned into one returning `PyResult<T>` (the same to
//! Python), since a panic has to become an error value. Functions without a
//! return type are refused at compile time, except `__releasebuffer__`,
//! which CPython does not let fail.

use proc_macro::TokenStream;
use quote::quote;
use syn::{parse_macro_input, spanned::Spanned, Block, ImplItem, Item, ReturnType};

/// Applies the panic guard to a function or to every method of an impl block.
#[proc_macro_attribute]
pub fn guarded(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut item = parse_macro_input!(item as Item);
    let result = match &mut item {
        Item::Fn(f) => wrap(&mut f.sig, &mut f.block, None),
        Item::Impl(block) => {
            let owner = &block.self_ty;
            let owner = quote!(#owner).to_string();
            block.items.iter_mut().try_for_each(|it| match it {
                ImplItem::Fn(m) if m.sig.ident == "__releasebuffer__" => Ok(()),
                ImplItem::Fn(m) => wrap(&mut m.sig, &mut m.block, Some(&owner)),
                _ => Ok(()),
            })
        }
        other => Err(syn::Error::new(other.span(), "#[guarded] applies to functions and impl blocks")),
    };
    match result {
        Ok(()) => quote!(#item).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Replaces `body` by `crate::errors::guard("name", || -> R { body })`,
/// first making the return type a `PyResult` if it is not one.
fn wrap(sig: &mut syn::Signature, body: &mut Block, owner: Option<&str>) -> syn::Result<()> {
    let ReturnType::Type(_, ret) = &mut sig.output else {
        return Err(syn::Error::new(sig.span(), "a guarded entry point must return a value (PyResult<()> for none)"));
    };
    let name = match owner {
        Some(o) => format!("{}.{}", o.trim_start_matches("Py"), sig.ident).to_lowercase(),
        None => sig.ident.to_string().trim_end_matches('_').to_string(),
    };
    let inner = body.clone();
    if is_result(ret) {
        *body = syn::parse_quote!({ crate::errors::guard(#name, || -> #ret #inner) });
    } else {
        let plain = ret.clone();
        **ret = syn::parse_quote!(::pyo3::PyResult<#plain>);
        *body = syn::parse_quote!({ crate::errors::guard(#name, || -> ::pyo3::PyResult<#plain> { Ok(#inner) }) });
    }
    Ok(())
}

/// Whether a return type is spelled `PyResult<..>` or `Result<..>`.
fn is_result(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "PyResult" || s.ident == "Result"),
        _ => false,
    }
}
