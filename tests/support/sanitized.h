// TRAINWATCH_SANITIZED: 1 when this build carries AddressSanitizer or ThreadSanitizer (their
// shadow memory and slower code make memory and time bounds meaningless), else 0. GCC says so
// with __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, clang only through __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TRAINWATCH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TRAINWATCH_SANITIZED 1
#endif
#endif
#ifndef TRAINWATCH_SANITIZED
#define TRAINWATCH_SANITIZED 0
#endif
