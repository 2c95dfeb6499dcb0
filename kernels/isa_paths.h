/* isa_paths.h - the code paths of a build that chooses its path at run time
 * (x86-64 without NS_NATIVE), best first: the one list of them.
 *
 *     X(path, arg, OPTIONS, NEEDS, RUNS): OPTIONS the compiler's options for
 *     the path (a string), NEEDS what the CPU needs (words, for a refusal),
 *     RUNS whether this CPU runs it (an expression)
 *
 * CMakeLists.txt reads the names and the options from this file (so each
 * path's X( line keeps its name and its options on that line) and compiles
 * every kernel file once per path with them; table.c expands the list into
 * each kernel's ops per path, isa.c into the names, what each needs and the
 * test of the CPU (CPU(feature): __builtin_cpu_supports, which also checks
 * that the operating system saves the wider registers). A new path is one
 * more X( line here and its implementations in the kernels that have one. */
#define NS_ISA_DISPATCH_PATHS(X, arg)                                                              \
    X(avx512, arg, "-mavx512f -mavx512vl -mavx512bw -mavx512dq -mavx2 -mfma -mbmi -mbmi2",         \
      "AVX-512 F, VL, BW and DQ, AVX2, FMA, BMI1 and BMI2",                                        \
      CPU(avx512f) && CPU(avx512vl) && CPU(avx512bw) && CPU(avx512dq) && CPU(avx2) && CPU(fma) &&  \
          CPU(bmi) && CPU(bmi2))                                                                   \
    X(avx2, arg, "-mavx2 -mfma -mbmi -mbmi2", "AVX2, FMA, BMI1 and BMI2",                          \
      CPU(avx2) && CPU(fma) && CPU(bmi) && CPU(bmi2))                                              \
    X(generic, arg, "", "", 1)
