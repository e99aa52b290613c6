/*
 * swig/java.i - the Java (JNI) side of the interface.
 *
 * The generated classes (package io.redlock.internal) are the raw layer; the
 * public API is the hand-written io.redlock package on top of it. This file
 * makes the raw layer safe to call from Java:
 *   - a negative status throws the io.redlock.RedlockException subclass for
 *     the code (the table lives in RedlockException.fromNative), carrying the
 *     calling thread's redlock_errmsg();
 *   - functions with an `out` parameter return the new object instead, and
 *     the other status functions return void;
 *   - strings go in as UTF-8 (not JNI's modified UTF-8), so a name maps to
 *     the same Redis key from every language; a NUL byte inside is refused;
 *   - string arrays are Java String[];
 *   - NULL objects are refused with NullPointerException;
 *   - the acquiring calls (redlock_lock, redlock_lock_multi, redlock_lock_rw,
 *     redlock_acquire_permit, redlock_lock_fair) wait in one call, as long as
 *     the caller asked, with an interrupt check that asks the calling thread's
 *     Thread.isInterrupted(): an interrupt ends the wait with
 *     REDLOCK_ECANCELED (CancelledException). What to retry and how long to
 *     pause is the library's business alone;
 *   - the asynchronous calls and the renewal of kept locks call back into
 *     Java on the client's thread (below);
 *   - the client's events go to io.redlock.NativeClient.log, on whichever
 *     thread emits them (below).
 *
 * The conversions never return early: a failed one leaves NULL and a pending
 * Java exception, the C call rejects the NULL without side effects (the ABI
 * accepts NULL everywhere), and the freearg code still frees what was made.
 */
%module(jniclassname="RedlockNativeJNI") RedlockNative

%{
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "redlock.h"

/* Throws the Java exception for a negative status: the detail of this
 * thread's last failure, or the code's description when there is none. */
static void redlock_java_throw(JNIEnv *jenv, int code)
{
    if ((*jenv)->ExceptionCheck(jenv))
        return; /* an argument was refused: that exception explains it */
    const char *detail = redlock_errmsg();
    const char *message = detail[0] != '\0' ? detail : redlock_strerror(code);
    jclass cls = (*jenv)->FindClass(jenv, "io/redlock/RedlockException");
    if (cls == NULL)
        return;
    jmethodID from_native = (*jenv)->GetStaticMethodID(jenv, cls, "fromNative",
                                                       "(I[B)Lio/redlock/RedlockException;");
    if (from_native == NULL)
        return;
    jsize len = (jsize)strlen(message);
    jbyteArray bytes = (*jenv)->NewByteArray(jenv, len);
    if (bytes == NULL)
        return;
    (*jenv)->SetByteArrayRegion(jenv, bytes, 0, len, (const jbyte *)message);
    jobject exception = (*jenv)->CallStaticObjectMethod(jenv, cls, from_native, (jint)code, bytes);
    if (!(*jenv)->ExceptionCheck(jenv))
        (*jenv)->Throw(jenv, (jthrowable)exception);
}

/* A NUL-terminated copy of a Java byte[] holding UTF-8, or NULL with a Java
 * exception pending (also when one was pending already). The caller frees it. */
static char *redlock_java_cstring(JNIEnv *jenv, jbyteArray bytes)
{
    if ((*jenv)->ExceptionCheck(jenv))
        return NULL;
    if (bytes == NULL) {
        SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException, "null string");
        return NULL;
    }
    jsize len = (*jenv)->GetArrayLength(jenv, bytes);
    char *s = malloc((size_t)len + 1);
    if (s == NULL) {
        SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "out of memory");
        return NULL;
    }
    (*jenv)->GetByteArrayRegion(jenv, bytes, 0, len, (jbyte *)s);
    s[len] = '\0';
    if (memchr(s, '\0', (size_t)len) != NULL) {
        free(s);
        SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException,
                                "string contains a NUL character");
        return NULL;
    }
    return s;
}

static void redlock_java_free_cstrings(char **strings, size_t n)
{
    if (strings == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free(strings[i]);
    free(strings);
}

/* The interrupt check of lock calls (redlock_set_interrupt_check): whether
 * the calling Java thread was interrupted, so that a long wait ends with
 * REDLOCK_ECANCELED (thrown as CancelledException, which RLock turns into
 * InterruptedException). data is the JNIEnv of the native method under way:
 * the library calls the check on the calling thread, which owns that env.
 * It asks Thread.currentThread().isInterrupted(), which leaves the interrupt
 * status as it is (RLock clears it when it throws InterruptedException).
 * java.lang.Thread and its two methods are looked up once, in JNI_OnLoad. */
static jclass redlock_java_thread_class;      /* a global reference */
static jmethodID redlock_java_current_thread; /* static Thread currentThread() */
static jmethodID redlock_java_is_interrupted; /* boolean isInterrupted() */
static jclass redlock_java_native_client;     /* a global reference */
static jmethodID redlock_java_is_closing;     /* static boolean isClosing(long) */

/* A wait's JNIEnv, and its ctx: the wait ends too once NativeClient.close()
 * began on that ctx (NativeClient.isClosing), so that close never waits for
 * a wait without end. */
struct redlock_java_wait {
    JNIEnv *jenv;
    redlock_ctx *ctx;
};

static int redlock_java_interrupted(void *data)
{
    const struct redlock_java_wait *wait = data;
    JNIEnv *jenv = wait->jenv;
    /* A pending exception forbids calling Java; it will be thrown anyway,
     * so end the wait. */
    if ((*jenv)->ExceptionCheck(jenv))
        return 1;
    jboolean closing = (*jenv)->CallStaticBooleanMethod(
        jenv, redlock_java_native_client, redlock_java_is_closing, (jlong)(intptr_t)wait->ctx);
    if (closing == JNI_TRUE || (*jenv)->ExceptionCheck(jenv))
        return 1;
    jobject self = (*jenv)->CallStaticObjectMethod(jenv, redlock_java_thread_class,
                                                   redlock_java_current_thread);
    if (self == NULL)
        return (*jenv)->ExceptionCheck(jenv) ? 1 : 0;
    jboolean yes = (*jenv)->CallBooleanMethod(jenv, self, redlock_java_is_interrupted);
    (*jenv)->DeleteLocalRef(jenv, self);
    return yes == JNI_TRUE || (*jenv)->ExceptionCheck(jenv);
}

/* ---- The asynchronous calls (redlock_lock_async, ...) ----
 *
 * The callback object is an io.redlock.NativeClient.Done; the library calls
 * done() on the client's thread, which this code attaches to the JVM (as a
 * daemon: it never keeps the JVM alive) the first time, and detaches when
 * the thread ends (a thread-specific key's destructor). */
static JavaVM *redlock_java_vm;
static pthread_key_t redlock_java_attached;
static jmethodID redlock_java_done;           /* void done(int, long, byte[]) */

static void redlock_java_detach(void *unused)
{
    (void)unused;
    (*redlock_java_vm)->DetachCurrentThread(redlock_java_vm);
}

/* The JNIEnv of the calling thread (the client's), attached to the JVM on
 * first use; NULL when it cannot be attached. */
static JNIEnv *redlock_java_attach(void)
{
    JNIEnv *jenv;
    if ((*redlock_java_vm)->GetEnv(redlock_java_vm, (void **)&jenv, JNI_VERSION_1_8) == JNI_OK)
        return jenv;
    if ((*redlock_java_vm)->AttachCurrentThreadAsDaemon(redlock_java_vm, (void **)&jenv, NULL)
        != JNI_OK)
        return NULL;
    pthread_setspecific(redlock_java_attached, jenv);
    return jenv;
}

/* A Java byte[] holding message's bytes (UTF-8), or NULL with an exception pending. */
static jbyteArray redlock_java_bytes(JNIEnv *jenv, const char *message)
{
    jsize len = (jsize)strlen(message);
    jbyteArray bytes = (*jenv)->NewByteArray(jenv, len);
    if (bytes != NULL)
        (*jenv)->SetByteArrayRegion(jenv, bytes, 0, len, (const jbyte *)message);
    return bytes;
}

static void redlock_java_async_done(void *data, int status, redlock_handle *handle,
                                    const char *message)
{
    jobject callback = (jobject)data;
    JNIEnv *jenv = redlock_java_attach();
    if (jenv == NULL) {
        redlock_handle_free(handle);   /* nobody can be told: the key expires */
        return;
    }
    jbyteArray bytes = redlock_java_bytes(jenv, message);
    if (bytes != NULL) {
        (*jenv)->CallVoidMethod(jenv, callback, redlock_java_done, (jint)status,
                                (jlong)(intptr_t)handle, bytes);
        (*jenv)->DeleteLocalRef(jenv, bytes);
    }
    if ((*jenv)->ExceptionCheck(jenv)) {
        /* done() never throws; if it did, the handle is its (it was
         * delivered) or the exception stopped it before: nothing to undo. */
        (*jenv)->ExceptionClear(jenv);
    }
    (*jenv)->DeleteGlobalRef(jenv, callback);
}

/* Starts an asynchronous call with a global reference to the callback,
 * dropped again when the call could not start (its exception thrown). */
#define REDLOCK_JAVA_ASYNC(CALL)                                                    \
    do {                                                                           \
        jobject ref = callback ? (*jenv)->NewGlobalRef(jenv, callback) : NULL;     \
        if (ref == NULL) {                                                         \
            if (!(*jenv)->ExceptionCheck(jenv))                                    \
                SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException,       \
                                        "null callback");                          \
            break;                                                                 \
        }                                                                          \
        int rc_ = (CALL);                                                          \
        if (rc_ != REDLOCK_OK) {                                                   \
            (*jenv)->DeleteGlobalRef(jenv, ref);                                   \
            redlock_java_throw(jenv, rc_);                                         \
        }                                                                          \
    } while (0)

JNIEXPORT void JNICALL Java_io_redlock_internal_RedlockNativeJNI_lockAsync(
    JNIEnv *jenv, jclass cls, jlong ctx, jobjectArray names, jlong lease_ms, jlong wait_ms,
    jobject callback)
{
    (void)cls;
    jsize n = names ? (*jenv)->GetArrayLength(jenv, names) : 0;
    char **strings = calloc(n > 0 ? (size_t)n : 1, sizeof *strings);
    size_t count = 0;
    if (strings == NULL) {
        SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "out of memory");
        return;
    }
    for (; count < (size_t)n && !(*jenv)->ExceptionCheck(jenv); count++) {
        jbyteArray item = (jbyteArray)(*jenv)->GetObjectArrayElement(jenv, names, (jsize)count);
        strings[count] = redlock_java_cstring(jenv, item);
        (*jenv)->DeleteLocalRef(jenv, item);
    }
    if (!(*jenv)->ExceptionCheck(jenv))
        REDLOCK_JAVA_ASYNC(redlock_lock_async((redlock_ctx *)(intptr_t)ctx,
                                              (const char *const *)strings, count, lease_ms,
                                              wait_ms, redlock_java_async_done, ref));
    redlock_java_free_cstrings(strings, count);
}

JNIEXPORT void JNICALL Java_io_redlock_internal_RedlockNativeJNI_lockRwAsync(
    JNIEnv *jenv, jclass cls, jlong ctx, jbyteArray name, jint mode, jlong held, jlong lease_ms,
    jlong wait_ms, jobject callback)
{
    (void)cls;
    char *text = redlock_java_cstring(jenv, name);
    if (!(*jenv)->ExceptionCheck(jenv))
        REDLOCK_JAVA_ASYNC(redlock_lock_rw_async((redlock_ctx *)(intptr_t)ctx, text, mode,
                                                 (const redlock_handle *)(intptr_t)held,
                                                 lease_ms, wait_ms, redlock_java_async_done,
                                                 ref));
    free(text);
}

JNIEXPORT void JNICALL Java_io_redlock_internal_RedlockNativeJNI_acquirePermitAsync(
    JNIEnv *jenv, jclass cls, jlong ctx, jbyteArray name, jint permits, jlong lease_ms,
    jlong wait_ms, jobject callback)
{
    (void)cls;
    char *text = redlock_java_cstring(jenv, name);
    if (!(*jenv)->ExceptionCheck(jenv))
        REDLOCK_JAVA_ASYNC(redlock_acquire_permit_async((redlock_ctx *)(intptr_t)ctx, text,
                                                        permits, lease_ms, wait_ms,
                                                        redlock_java_async_done, ref));
    free(text);
}

JNIEXPORT void JNICALL Java_io_redlock_internal_RedlockNativeJNI_lockFairAsync(
    JNIEnv *jenv, jclass cls, jlong ctx, jbyteArray name, jlong lease_ms, jlong wait_ms,
    jobject callback)
{
    (void)cls;
    char *text = redlock_java_cstring(jenv, name);
    if (!(*jenv)->ExceptionCheck(jenv))
        REDLOCK_JAVA_ASYNC(redlock_lock_fair_async((redlock_ctx *)(intptr_t)ctx, text, lease_ms,
                                                   wait_ms, redlock_java_async_done, ref));
    free(text);
}

JNIEXPORT void JNICALL Java_io_redlock_internal_RedlockNativeJNI_extendAsync(
    JNIEnv *jenv, jclass cls, jlong handle, jlong lease_ms, jobject callback)
{
    (void)cls;
    REDLOCK_JAVA_ASYNC(redlock_extend_async((redlock_handle *)(intptr_t)handle, lease_ms,
                                            redlock_java_async_done, ref));
}

JNIEXPORT void JNICALL Java_io_redlock_internal_RedlockNativeJNI_unlockAsync(
    JNIEnv *jenv, jclass cls, jlong handle, jobject callback)
{
    (void)cls;
    REDLOCK_JAVA_ASYNC(redlock_unlock_async((redlock_handle *)(intptr_t)handle,
                                            redlock_java_async_done, ref));
}

/* ---- Kept locks (redlock_handle_watch) and the lost-lock signal ----
 *
 * The library's data for a watched handle is a number, the watch's id, not
 * a reference: the lost callback calls the static
 * io.redlock.NativeClient.lost(long id, int status, byte[] message), which
 * finds the hold by its id and ignores ids it no longer knows. So the
 * callback never touches a Java object that may have been collected, nor
 * the handle (which another thread may be freeing: the library waits for
 * the callback to end before it frees a watched handle). NativeClient.lost
 * only hands the news to another thread: it takes no lock that a thread
 * waiting in the library (an unlock or a free, which wait for this
 * callback) might hold. Ids are at most 2^31 on 32-bit platforms. */
static jmethodID redlock_java_lost;           /* static void lost(long, int, byte[]) */

static void redlock_java_handle_lost(void *data, redlock_handle *handle, int status,
                                     const char *message)
{
    (void)handle;
    JNIEnv *jenv = redlock_java_attach();
    if (jenv == NULL)
        return;   /* nobody can be told; redlock_handle_lost says it */
    jbyteArray bytes = redlock_java_bytes(jenv, message);
    if (bytes != NULL) {
        (*jenv)->CallStaticVoidMethod(jenv, redlock_java_native_client, redlock_java_lost,
                                      (jlong)(intptr_t)data, (jint)status, bytes);
        (*jenv)->DeleteLocalRef(jenv, bytes);
    }
    if ((*jenv)->ExceptionCheck(jenv))
        (*jenv)->ExceptionClear(jenv);   /* lost() never throws; the thread must go on */
}

JNIEXPORT void JNICALL Java_io_redlock_internal_RedlockNativeJNI_watch(
    JNIEnv *jenv, jclass cls, jlong handle, jlong id)
{
    (void)cls;
    redlock_handle *h = (redlock_handle *)(intptr_t)handle;
    if (h == NULL) {
        SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException, "null redlock_handle");
        return;
    }
    int rc = redlock_handle_watch(h, redlock_java_handle_lost, (void *)(intptr_t)id);
    if (rc != REDLOCK_OK)
        redlock_java_throw(jenv, rc);
}

/* ---- Events (redlock_ctx_set_log) ----
 *
 * The hook calls the static io.redlock.NativeClient.log(int level, byte[]
 * event, byte[] message), which hands the event to System.Logger
 * "io.redlock". It runs on the thread that emits the event: a Java thread in
 * a blocking call (already attached; no exception is pending there, or the
 * event is skipped rather than call Java with one), or the client's thread
 * (attached here, as for the callbacks above). log() never throws nor waits
 * for the client. */
static jmethodID redlock_java_log;            /* static void log(int, byte[], byte[]) */

static void redlock_java_event(void *data, int level, const char *event, const char *message)
{
    (void)data;
    JNIEnv *jenv = redlock_java_attach();
    if (jenv == NULL || (*jenv)->ExceptionCheck(jenv))
        return;
    jbyteArray name = redlock_java_bytes(jenv, event);
    jbyteArray text = name != NULL ? redlock_java_bytes(jenv, message) : NULL;
    if (text != NULL)
        (*jenv)->CallStaticVoidMethod(jenv, redlock_java_native_client, redlock_java_log,
                                      (jint)level, name, text);
    if ((*jenv)->ExceptionCheck(jenv))
        (*jenv)->ExceptionClear(jenv);   /* log() never throws; out of memory at worst */
    if (name != NULL)
        (*jenv)->DeleteLocalRef(jenv, name);
    if (text != NULL)
        (*jenv)->DeleteLocalRef(jenv, text);
}

JNIEXPORT void JNICALL Java_io_redlock_internal_RedlockNativeJNI_setLog(
    JNIEnv *jenv, jclass cls, jlong ctx, jint min_level)
{
    (void)cls;
    int rc = redlock_ctx_set_log((redlock_ctx *)(intptr_t)ctx, redlock_java_event, min_level,
                                 NULL);
    if (rc != REDLOCK_OK)
        redlock_java_throw(jenv, rc);
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved)
{
    JNIEnv *jenv;
    (void)reserved;
    redlock_java_vm = vm;
    if (pthread_key_create(&redlock_java_attached, redlock_java_detach) != 0)
        return JNI_ERR;
    if ((*vm)->GetEnv(vm, (void **)&jenv, JNI_VERSION_1_8) != JNI_OK)
        return JNI_ERR;
    jclass thread = (*jenv)->FindClass(jenv, "java/lang/Thread");
    if (thread == NULL)
        return JNI_ERR;
    redlock_java_thread_class = (jclass)(*jenv)->NewGlobalRef(jenv, thread);
    (*jenv)->DeleteLocalRef(jenv, thread);
    if (redlock_java_thread_class == NULL)
        return JNI_ERR;
    redlock_java_current_thread = (*jenv)->GetStaticMethodID(
        jenv, redlock_java_thread_class, "currentThread", "()Ljava/lang/Thread;");
    redlock_java_is_interrupted = (*jenv)->GetMethodID(jenv, redlock_java_thread_class,
                                                       "isInterrupted", "()Z");
    if (redlock_java_current_thread == NULL || redlock_java_is_interrupted == NULL)
        return JNI_ERR;
    jclass done = (*jenv)->FindClass(jenv, "io/redlock/NativeClient$Done");
    if (done == NULL)
        return JNI_ERR;
    redlock_java_done = (*jenv)->GetMethodID(jenv, done, "done", "(IJ[B)V");
    (*jenv)->DeleteLocalRef(jenv, done);
    if (redlock_java_done == NULL)
        return JNI_ERR;
    jclass client = (*jenv)->FindClass(jenv, "io/redlock/NativeClient");
    if (client == NULL)
        return JNI_ERR;
    redlock_java_native_client = (jclass)(*jenv)->NewGlobalRef(jenv, client);
    (*jenv)->DeleteLocalRef(jenv, client);
    if (redlock_java_native_client == NULL)
        return JNI_ERR;
    redlock_java_lost = (*jenv)->GetStaticMethodID(jenv, redlock_java_native_client, "lost",
                                                   "(JI[B)V");
    redlock_java_log = (*jenv)->GetStaticMethodID(jenv, redlock_java_native_client, "log",
                                                  "(I[B[B)V");
    redlock_java_is_closing = (*jenv)->GetStaticMethodID(jenv, redlock_java_native_client,
                                                         "isClosing", "(J)Z");
    if (redlock_java_lost == NULL || redlock_java_log == NULL || redlock_java_is_closing == NULL)
        return JNI_ERR;
    return JNI_VERSION_1_8;
}

JNIEXPORT void JNICALL JNI_OnUnload(JavaVM *vm, void *reserved)
{
    JNIEnv *jenv;
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jenv, JNI_VERSION_1_8) == JNI_OK) {
        if (redlock_java_thread_class)
            (*jenv)->DeleteGlobalRef(jenv, redlock_java_thread_class);
        if (redlock_java_native_client)
            (*jenv)->DeleteGlobalRef(jenv, redlock_java_native_client);
    }
    redlock_java_thread_class = NULL;
    redlock_java_native_client = NULL;
}

/* The calls that write text into a buffer, as text: the value, or NULL
 * with this thread's error set (always REDLOCK_EINVAL). */
static _Thread_local char redlock_java_text[4200];

static const char *redlock_java_get_option(const redlock_ctx *ctx, const char *name)
{
    return redlock_ctx_get_option(ctx, name, redlock_java_text, sizeof redlock_java_text)
        == REDLOCK_OK ? redlock_java_text : NULL;
}

static const char *redlock_java_health_value(const char *text, size_t node, const char *field)
{
    return redlock_health_value(text, node, field, redlock_java_text, sizeof redlock_java_text)
        == REDLOCK_OK ? redlock_java_text : NULL;
}

static const char *redlock_java_option_default(const char *name)
{
    return redlock_option_default(name, redlock_java_text, sizeof redlock_java_text)
        == REDLOCK_OK ? redlock_java_text : NULL;
}

static const char *redlock_java_uri_list_item(const char *list, size_t index)
{
    return redlock_uri_list_item(list, index, redlock_java_text, sizeof redlock_java_text)
        == REDLOCK_OK ? redlock_java_text : NULL;
}

/* redlock_arg_check's value, or -1 (never a checked value) with this
 * thread's error set (REDLOCK_EINVAL). */
static int64_t redlock_java_arg_check(int arg, const char *what, double value)
{
    int64_t out = 0;
    return redlock_arg_check(&out, arg, what, value) == REDLOCK_OK ? out : -1;
}

%}

/* The thread's message is read by the exception code above, right after the
 * failing call; a Java caller could not rely on it. */
%ignore redlock_errmsg;

/* Constants as compile-time Java constants. */
%javaconst(1);

/* ---- strings in: Java String -> UTF-8 ---- */
%typemap(jni) const char *UTF8 "jbyteArray"
%typemap(jtype) const char *UTF8 "byte[]"
%typemap(jstype) const char *UTF8 "String"
%typemap(javain) const char *UTF8 "$javainput.getBytes(java.nio.charset.StandardCharsets.UTF_8)"
%typemap(in) const char *UTF8 "$1 = redlock_java_cstring(jenv, $input);"
%typemap(freearg) const char *UTF8 "free($1);"
%apply const char *UTF8 { const char *name, const char *value, const char *resource,
                          const char *text, const char *field, const char *list,
                          const char *what };

/* ---- string arrays in: Java String[] -> UTF-8 array plus count ---- */
%typemap(jni) (const char *const *STRINGS, size_t COUNT) "jobjectArray"
%typemap(jtype) (const char *const *STRINGS, size_t COUNT) "byte[][]"
%typemap(jstype) (const char *const *STRINGS, size_t COUNT) "String[]"
%typemap(javain) (const char *const *STRINGS, size_t COUNT)
    "java.util.Arrays.stream($javainput)"
    ".map(s -> s.getBytes(java.nio.charset.StandardCharsets.UTF_8)).toArray(byte[][]::new)"
%typemap(in) (const char *const *STRINGS, size_t COUNT) (char **strings = NULL, size_t count = 0) {
    jsize n = 0;
    if ($input == NULL)
        SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException, "null array");
    else
        n = (*jenv)->GetArrayLength(jenv, $input);
    strings = calloc(n > 0 ? (size_t)n : 1, sizeof *strings);
    if (strings == NULL && !(*jenv)->ExceptionCheck(jenv))
        SWIG_JavaThrowException(jenv, SWIG_JavaOutOfMemoryError, "out of memory");
    for (; count < (size_t)n && !(*jenv)->ExceptionCheck(jenv); count++) {
        jbyteArray item = (jbyteArray)(*jenv)->GetObjectArrayElement(jenv, $input, (jsize)count);
        strings[count] = redlock_java_cstring(jenv, item);
        (*jenv)->DeleteLocalRef(jenv, item);
    }
    $1 = (*jenv)->ExceptionCheck(jenv) ? NULL : strings;
    $2 = count;
}
%typemap(freearg) (const char *const *STRINGS, size_t COUNT) "redlock_java_free_cstrings(strings$argnum, count$argnum);"
%apply (const char *const *STRINGS, size_t COUNT) {
    (const char *const *node_uris, size_t n_nodes),
    (const char *const *resources, size_t n_resources)
};

/* ---- objects in: the Java long holding the pointer (a cast, not SWIG's
 * type-punning copy, which breaks strict aliasing) ---- */
%typemap(in) redlock_ctx *, const redlock_ctx *, redlock_handle *, const redlock_handle * "$1 = ($1_ltype)(intptr_t)$input;"

/* ---- NULL objects in ---- */
%typemap(check) redlock_ctx *ctx, const redlock_ctx *ctx, redlock_handle *h, const redlock_handle *h {
    if ($1 == NULL && !(*jenv)->ExceptionCheck(jenv))
        SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException, "null $1_basetype");
}

/* ---- output parameters: the new object becomes the return value ---- */
%typemap(in, numinputs=0) redlock_ctx **out (redlock_ctx *tmp = NULL),
                          redlock_handle **out (redlock_handle *tmp = NULL) "$1 = &tmp;"
%typemap(argout) redlock_ctx **out, redlock_handle **out "$result = (jlong)(intptr_t)*$1;"

/* A status function whose Java method returns the `out` object of TYPE. */
%define REDLOCK_RETURNS_OUT(FUNC, TYPE)
%typemap(jni) int FUNC "jlong"
%typemap(jtype) int FUNC "long"
%typemap(jstype) int FUNC "SWIGTYPE_p_" #TYPE
%typemap(javaout) int FUNC { return new SWIGTYPE_p_ ## TYPE($jnicall, false); }
%typemap(out) int FUNC "if ($1 != REDLOCK_OK) redlock_java_throw(jenv, $1);"
%enddef

/* A status function whose Java method returns nothing. */
%define REDLOCK_RETURNS_VOID(FUNC)
%typemap(jstype) int FUNC "void"
%typemap(javaout) int FUNC { $jnicall; }
%typemap(out) int FUNC {
    if ($1 != REDLOCK_OK)
        redlock_java_throw(jenv, $1);
    $result = $1;
}
%enddef

/* Waits for a lock run with the interrupt check above, installed for this
 * call only (the check holds this call's JNIEnv). The library decides what
 * is worth another attempt and how long to pause; the check only lets
 * Thread.interrupt() end the wait (REDLOCK_ECANCELED). */
%define REDLOCK_INTERRUPTIBLE(FUNC)
%exception FUNC {
    struct redlock_java_wait wait = { jenv, arg2 };
    redlock_set_interrupt_check(redlock_java_interrupted, &wait);
    $action
    redlock_set_interrupt_check(NULL, NULL);
}
%enddef
REDLOCK_INTERRUPTIBLE(redlock_lock)
REDLOCK_INTERRUPTIBLE(redlock_lock_multi)
REDLOCK_INTERRUPTIBLE(redlock_lock_rw)
REDLOCK_INTERRUPTIBLE(redlock_acquire_permit)
REDLOCK_INTERRUPTIBLE(redlock_lock_fair)

/* Options, and the other calls that write text into a buffer (1.3: a
 * health field, an option's default, a URI of a list), are read through
 * wrappers that return the text, as UTF-8 bytes made into a Java String (a
 * key_prefix may hold any character, and JNI's NewStringUTF takes modified
 * UTF-8). A failure throws InvalidArgumentException; the out code never
 * returns early, so the freearg code still frees the arguments. */
%ignore redlock_ctx_get_option;
%ignore redlock_health_value;
%ignore redlock_option_default;
%ignore redlock_uri_list_item;
%define REDLOCK_RETURNS_TEXT(FUNC)
%typemap(jni) const char *FUNC "jbyteArray"
%typemap(jtype) const char *FUNC "byte[]"
%typemap(jstype) const char *FUNC "String"
%typemap(javaout) const char *FUNC {
    return new String($jnicall, java.nio.charset.StandardCharsets.UTF_8);
  }
%typemap(out) const char *FUNC {
    if ($1 == NULL) {
        redlock_java_throw(jenv, REDLOCK_EINVAL);
    } else {
        jsize len = (jsize)strlen($1);
        $result = (*jenv)->NewByteArray(jenv, len);
        if ($result != NULL)
            (*jenv)->SetByteArrayRegion(jenv, $result, 0, len, (const jbyte *)$1);
    }
}
%enddef
REDLOCK_RETURNS_TEXT(redlock_java_get_option)
REDLOCK_RETURNS_TEXT(redlock_java_health_value)
REDLOCK_RETURNS_TEXT(redlock_java_option_default)
REDLOCK_RETURNS_TEXT(redlock_java_uri_list_item)
const char *redlock_java_get_option(const redlock_ctx *ctx, const char *name);
const char *redlock_java_health_value(const char *text, size_t node, const char *field);
const char *redlock_java_option_default(const char *name);
const char *redlock_java_uri_list_item(const char *list, size_t index);

/* A checked argument (redlock_arg_check) as a long; a type (REDLOCK_TYPE_*)
 * as an int. A failure throws InvalidArgumentException. */
%ignore redlock_arg_check;
%typemap(out) int64_t redlock_java_arg_check {
    if ($1 < 0)
        redlock_java_throw(jenv, REDLOCK_EINVAL);
    $result = (jlong)$1;
}
int64_t redlock_java_arg_check(int arg, const char *what, double value);
%typemap(out) int redlock_health_type, int redlock_option_type {
    if ($1 < 0)
        redlock_java_throw(jenv, $1);
    $result = (jint)$1;
}

REDLOCK_RETURNS_OUT(redlock_ctx_new, redlock_ctx)
REDLOCK_RETURNS_OUT(redlock_lock, redlock_handle)
REDLOCK_RETURNS_OUT(redlock_lock_multi, redlock_handle)
REDLOCK_RETURNS_OUT(redlock_lock_rw, redlock_handle)
REDLOCK_RETURNS_OUT(redlock_acquire_permit, redlock_handle)
REDLOCK_RETURNS_OUT(redlock_lock_fair, redlock_handle)
REDLOCK_RETURNS_VOID(redlock_ctx_set_option)
REDLOCK_RETURNS_VOID(redlock_extend)
REDLOCK_RETURNS_VOID(redlock_unlock)
REDLOCK_RETURNS_VOID(redlock_inspect)
REDLOCK_RETURNS_VOID(redlock_force_unlock)
REDLOCK_RETURNS_VOID(redlock_handle_fence)
REDLOCK_RETURNS_VOID(redlock_ctx_ping)
REDLOCK_RETURNS_VOID(redlock_inspect_multi)
REDLOCK_RETURNS_VOID(redlock_handle_reenter)
REDLOCK_RETURNS_VOID(redlock_handle_leave)
REDLOCK_RETURNS_VOID(redlock_permits_available)

/* The permits available come back through an int[1], as the other counts
 * (redlock.i's outputs). */
%include <typemaps.i>
%apply int *OUTPUT { int *available };

/* The library is loaded by the class that declares the native methods. */
%pragma(java) jniclasscode=%{
  static {
    NativeLoader.load();
  }

  /** The address behind a pointer object, and a handle object for an address (0: null). */
  public static long pointer(SWIGTYPE_p_redlock_ctx ctx) {
    return SWIGTYPE_p_redlock_ctx.getCPtr(ctx);
  }
  public static long pointer(SWIGTYPE_p_redlock_handle handle) {
    return SWIGTYPE_p_redlock_handle.getCPtr(handle);
  }
  public static SWIGTYPE_p_redlock_handle handle(long address) {
    return address == 0 ? null : new SWIGTYPE_p_redlock_handle(address, false);
  }

  /** redlock_lock_async: done (an io.redlock.NativeClient.Done) is called once, on the
   *  client's thread; names are UTF-8. Throws when the call could not start. */
  public final static native void lockAsync(long ctx, byte[][] names, long leaseMs, long waitMs,
                                            Object done);
  /** redlock_lock_rw_async, likewise: mode REDLOCK_READ or REDLOCK_WRITE, held the address
   *  of the caller's handle of the same read-write lock or 0; name is UTF-8. */
  public final static native void lockRwAsync(long ctx, byte[] name, int mode, long held,
                                              long leaseMs, long waitMs, Object done);
  /** redlock_acquire_permit_async, likewise: a permit of the semaphore name (UTF-8) of
   *  permits permits. */
  public final static native void acquirePermitAsync(long ctx, byte[] name, int permits,
                                                     long leaseMs, long waitMs, Object done);
  /** redlock_lock_fair_async, likewise: the fair lock of name (UTF-8). */
  public final static native void lockFairAsync(long ctx, byte[] name, long leaseMs,
                                                long waitMs, Object done);
  /** redlock_extend_async, likewise. */
  public final static native void extendAsync(long handle, long leaseMs, Object done);
  /** redlock_unlock_async, likewise. */
  public final static native void unlockAsync(long handle, Object done);
  /** redlock_handle_watch: renews the handle on the client's thread; when the lock is lost,
   *  io.redlock.NativeClient.lost(id, status, message) is called once, on that thread.
   *  Throws when the handle is not held or is watched already. */
  public final static native void watch(long handle, long id);
  /** redlock_ctx_set_log: the client's events of minLevel and above go to
   *  io.redlock.NativeClient.log(level, event, message), on the thread that emits each. */
  public final static native void setLog(long ctx, int minLevel);
%}

%include "redlock.i"
