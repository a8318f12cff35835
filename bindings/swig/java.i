/*
 * java.i - Java specifics of the zkelect SWIG interface (included by
 * zkelect.i). Generated with -package org.zkelect -module ZkelectNative:
 * the raw layer under the idiomatic classes (Elector, Client, Observer).
 *
 * Failures throw org.zkelect.ZkelectException(code, message). Wrapped
 * handles get no finalize(): a finalizer may run on a client before the
 * elections made on it, which the C API forbids; the idiomatic classes free
 * handles in order from close() and from a Cleaner.
 */

%include "enumsimple.swg"

%{
static void zkelect_java_throw(JNIEnv *jenv, int code, const char *msg)
{
    jclass cls = (*jenv)->FindClass(jenv, "org/zkelect/ZkelectException");
    if (cls == NULL)
        return; /* NoClassDefFoundError is pending */
    jmethodID ctor = (*jenv)->GetMethodID(jenv, cls, "<init>", "(ILjava/lang/String;)V");
    if (ctor == NULL)
        return;
    jstring jmsg = (*jenv)->NewStringUTF(jenv, msg);
    if (jmsg == NULL)
        return;
    jobject ex = (*jenv)->NewObject(jenv, cls, ctor, (jint)code, jmsg);
    if (ex != NULL)
        (*jenv)->Throw(jenv, (jthrowable)ex);
}
%}

%define ZKELECT_RAISE(code, msg)
    zkelect_java_throw(jenv, code, msg);
    return $null;
%enddef

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
