//! One list of an enum's variants, checked by the compiler.

/// `impl E { pub const ALL }`: every variant of the fieldless enum `E`, in
/// the order given, for the places that must offer each one (a flag's
/// values, a help list). The same list feeds an exhaustive `match`, so a
/// variant added to the enum but left out here fails to compile rather than
/// silently never being offered (and one listed twice is an unreachable
/// pattern). Use, next to the enum:
/// `crate::variants::all_variants!(Boot, [Fstab, Systemd, None]);`
macro_rules! all_variants {
    ($(#[$doc:meta])* $enum:ident, [$($variant:ident),+ $(,)?] $(,)?) => {
        impl $enum {
            $(#[$doc])*
            pub const ALL: &'static [$enum] = &[$($enum::$variant),+];
        }
        const _: fn($enum) = |v| match v {
            $($enum::$variant)|+ => {}
        };
    };
}
pub(crate) use all_variants;
