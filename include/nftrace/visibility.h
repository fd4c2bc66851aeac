/*
 * NF_API marks the functions libnfence exports. libnfence is built with
 * -fvisibility=hidden (capture/CMakeLists.txt): everything else in it, the
 * CTF writer, the session environment, the engine's threads and core's
 * helpers, stays private to the library, so a program can only depend on the
 * declared API (nfence.h, and the parts of events.h and error.h it needs).
 * In the static libraries the CLI links the attribute changes nothing.
 */
#ifndef NFTRACE_VISIBILITY_H
#define NFTRACE_VISIBILITY_H

#if defined(__GNUC__) && __GNUC__ >= 4
#define NF_API __attribute__((visibility("default")))
#else
#define NF_API
#endif

#endif
