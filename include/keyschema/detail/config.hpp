// keyschema/detail/config.hpp: version macros and the version-tagged inline namespace.
//
// Every public name lives in `keyschema::v0_1` through an inline namespace, so that a program that
// links two incompatible keyschema versions fails to link instead of mixing layouts silently.
// The package declares minor versions incompatible (`SameMinorVersion`), so the namespace names
// major and minor: bump it with KEYSCHEMA_VERSION_MINOR (as fmt bumps its inline namespace on each
// ABI break). Users always spell names as `keyschema::...`.
#pragma once

#define KEYSCHEMA_VERSION_MAJOR 0
#define KEYSCHEMA_VERSION_MINOR 1
#define KEYSCHEMA_VERSION_PATCH 0

#define KEYSCHEMA_BEGIN_NAMESPACE \
  namespace keyschema {           \
  inline namespace v0_1 {
#define KEYSCHEMA_END_NAMESPACE \
  }                             \
  }

// Inlines a small function on a per-entry path (a scan's step and decode), where the compiler's
// size heuristics would otherwise keep a call.
// KEYSCHEMA_ALWAYS_INLINE_LAMBDA does it for a lambda (after its parameter list).
#if defined(__GNUC__) || defined(__clang__)
#define KEYSCHEMA_ALWAYS_INLINE [[gnu::always_inline]] inline
#define KEYSCHEMA_ALWAYS_INLINE_LAMBDA __attribute__((always_inline))
#else
#define KEYSCHEMA_ALWAYS_INLINE inline
#define KEYSCHEMA_ALWAYS_INLINE_LAMBDA
#endif
