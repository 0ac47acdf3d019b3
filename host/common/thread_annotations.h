// Clang's thread-safety attributes, spelled once. Under clang with
// -Wthread-safety (the CI build NODEPLANE_THREAD_SAFETY) every read or write
// of a NP_GUARDED_BY member without its mutex held, and every call of a
// NP_REQUIRES function without it, is a compile error; elsewhere they are
// nothing. Use them with common/mutex.h: std::mutex carries no attributes.
#pragma once

#if defined(__clang__)
#define NP_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define NP_THREAD_ANNOTATION(x)
#endif

#define NP_CAPABILITY(name) NP_THREAD_ANNOTATION(capability(name))
#define NP_SCOPED_CAPABILITY NP_THREAD_ANNOTATION(scoped_lockable)
#define NP_GUARDED_BY(mu) NP_THREAD_ANNOTATION(guarded_by(mu))
#define NP_PT_GUARDED_BY(mu) NP_THREAD_ANNOTATION(pt_guarded_by(mu))
#define NP_REQUIRES(...) NP_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define NP_EXCLUDES(...) NP_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define NP_ACQUIRE(...) NP_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define NP_RELEASE(...) NP_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// For a function the analysis cannot follow; say why beside each use.
#define NP_NO_THREAD_SAFETY_ANALYSIS NP_THREAD_ANNOTATION(no_thread_safety_analysis)
