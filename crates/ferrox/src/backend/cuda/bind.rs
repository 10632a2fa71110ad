//! Binding a CUDA library's C functions from the very copy `libraries.rs`
//! opened (by its full path), not through cudarc's own loader: that loader
//! asks for the bare soname (`libnvrtc.so`, `libcublasLt.so`,
//! `libcudnn.so`) first, which on a machine with a system CUDA install is
//! another copy than the pip wheel's ferrox found and reported (and cuDNN,
//! mixing copies, refuses every descriptor). cudarc still supplies the
//! types.

/// Declares `$api`, a table of the named C functions (each returning
/// `$ret`), with `bind(&Loaded)` looking each one up in the loaded library.
macro_rules! bound_functions {
    ($(#[$doc:meta])* $api:ident -> $ret:ty { $($name:ident($($arg:ident: $ty:ty),*);)* }) => {
        $(#[$doc])*
        #[allow(non_snake_case)]
        pub(crate) struct $api {
            $(pub(crate) $name: unsafe extern "C" fn($($ty),*) -> $ret,)*
        }

        impl $api {
            /// Looks every function up in `lib`; names the first missing one.
            fn bind(lib: &super::libraries::Loaded) -> Result<$api, String> {
                Ok($api {
                    $($name: {
                        let f = lib.symbol(stringify!($name)).ok_or_else(|| {
                            format!("{} has no {}", lib.path.display(), stringify!($name))
                        })?;
                        // SAFETY: the symbol is the library's function of
                        // this signature (its C API, as cudarc declares it).
                        unsafe { std::mem::transmute::<*mut std::ffi::c_void, unsafe extern "C" fn($($ty),*) -> $ret>(f) }
                    },)*
                })
            }
        }
    };
}

pub(crate) use bound_functions;
