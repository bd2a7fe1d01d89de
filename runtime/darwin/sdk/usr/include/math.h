/* math.h for kiln's arm64 macOS stub SDK (see _kiln_darwin.h): the f32 and
 * f64 functions of libSystem's libm that kiln's examples call. */
#ifndef __MATH__
#define __MATH__
#include "_kiln_darwin.h"
_KILN_BEGIN_DECLS
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define _KILN_MATH(name) float name##f(float); double name(double);
_KILN_MATH(sin) _KILN_MATH(cos) _KILN_MATH(tan) _KILN_MATH(exp) _KILN_MATH(log)
_KILN_MATH(sqrt) _KILN_MATH(tanh) _KILN_MATH(fabs) _KILN_MATH(floor) _KILN_MATH(ceil)
_KILN_MATH(round) _KILN_MATH(erf)
#undef _KILN_MATH
float powf(float, float);
double pow(double, double);
float fmaxf(float, float);
float fminf(float, float);
_KILN_END_DECLS
#endif
