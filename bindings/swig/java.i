/*
 * java.i - Java specifics of the zkelect SWIG interface (included by
 * zkelect.i). Generated with -package org.zkelect -module ZkelectNative:
 * the raw layer under the idiomatic classes (Elector, Client, Observer).
 *
 * Failures throw org.zkelect.ZkelectException(code, message). Wrapped
 * handles get no finalize(): a finalizer may run on a client before the
 * elections made on it, which the C API forbids; the idiomatic classes free
 * handles in order from close() and from a Cleaner (Handle.java).
 *
 * Strings cross as byte[] holding real UTF-8 (org.zkelect.Utf8), not as
 * jstring. The copies made for string arguments are tracked per thread (one
 * wrapper runs on one thread from start to end) and freed both by the
 * wrapper's own cleanup and before an error returns early from it, which
 * skips that cleanup.
 */

%include "enumsimple.swg"

%{
#define ZKELECT_JAVA_MAX_STRINGS 8
static __thread char *zkelect_java_strings[ZKELECT_JAVA_MAX_STRINGS];
static __thread int zkelect_java_nstrings;

static void zkelect_java_release_strings(void)
{
    while (zkelect_java_nstrings > 0)
        free(zkelect_java_strings[--zkelect_java_nstrings]);
}

static void zkelect_java_throw(JNIEnv *jenv, int code, const char *msg);

/* A NUL-terminated copy of the UTF-8 bytes b (NULL for null), tracked for
 * release; NULL with an exception pending when it cannot be made. */
static char *zkelect_java_string(JNIEnv *jenv, jbyteArray b, int *failed)
{
    *failed = 0;
    if (b == NULL)
        return NULL;
    jsize n = (*jenv)->GetArrayLength(jenv, b);
    char *s = (char *)malloc((size_t)n + 1);
    if (s == NULL || zkelect_java_nstrings >= ZKELECT_JAVA_MAX_STRINGS) {
        free(s);
        zkelect_java_release_strings();
        zkelect_java_throw(jenv, ZKELECT_ENOMEM, "out of memory copying a string");
        *failed = 1;
        return NULL;
    }
    (*jenv)->GetByteArrayRegion(jenv, b, 0, n, (jbyte *)s);
    s[n] = '\0';
    zkelect_java_strings[zkelect_java_nstrings++] = s;
    return s;
}

static void zkelect_java_throw(JNIEnv *jenv, int code, const char *msg)
{
    jclass cls = (*jenv)->FindClass(jenv, "org/zkelect/ZkelectException");
    if (cls == NULL)
        return; /* NoClassDefFoundError is pending */
    /* The message may quote a path or id: UTF-8 bytes, as every string. */
    jmethodID ctor = (*jenv)->GetMethodID(jenv, cls, "<init>", "(I[B)V");
    if (ctor == NULL)
        return;
    jsize n = (jsize)strlen(msg);
    jbyteArray jmsg = (*jenv)->NewByteArray(jenv, n);
    if (jmsg == NULL)
        return;
    (*jenv)->SetByteArrayRegion(jenv, jmsg, 0, n, (const jbyte *)msg);
    jobject ex = (*jenv)->NewObject(jenv, cls, ctor, (jint)code, jmsg);
    if (ex != NULL)
        (*jenv)->Throw(jenv, (jthrowable)ex);
}
%}

%define ZKELECT_RAISE(code, msg)
    zkelect_java_release_strings();
    zkelect_java_throw(jenv, code, msg);
    return $null;
%enddef

%typemap(jni) char *, const char * "jbyteArray"
%typemap(jtype) char *, const char * "byte[]"
%typemap(jstype) char *, const char * "String"
%typemap(javain) char *, const char * "Utf8.encode($javainput)"
%typemap(javaout) char *, const char * { return Utf8.decode($jnicall); }
%typemap(in) char *, const char * %{
    {
        int zkelect_failed;
        $1 = ($1_ltype)zkelect_java_string(jenv, $input, &zkelect_failed);
        if (zkelect_failed)
            return $null;
    }
%}
/* One release frees every string of the call; later ones find none. */
%typemap(freearg) char *, const char * %{ zkelect_java_release_strings(); %}
%typemap(out) char *, const char * %{
    $result = NULL;
    if ($1 != NULL) {
        jsize zkelect_n = (jsize)strlen((const char *)$1);
        $result = (*jenv)->NewByteArray(jenv, zkelect_n);
        if ($result != NULL)
            (*jenv)->SetByteArrayRegion(jenv, $result, 0, zkelect_n, (const jbyte *)$1);
    }
%}

%define ZKELECT_TYPE(name) Native ## name %enddef

%typemap(javafinalize) SWIGTYPE ""

/* One place decides how the JNI library is found: the system property
 * org.zkelect.jni (a full path), else java.library.path. */
%pragma(java) jniclasscode=%{
  static {
    String path = System.getProperty("org.zkelect.jni");
    if (path != null && !path.isEmpty()) {
      System.load(path);
    } else {
      System.loadLibrary("zkelect_jni");
    }
  }
%}
