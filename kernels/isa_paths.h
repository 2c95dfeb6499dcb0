/* isa_paths.h - the code paths of a build that chooses its path at run time
 * (x86-64 without NS_NATIVE), best first: X(path, arg) for each. The one
 * list table.c and isa.c read; CMakeLists.txt's NS_ISA_PATHS must name the
 * same paths in the same order (it compiles each kernel file once per path). */
#define NS_ISA_DISPATCH_PATHS(X, arg) X(avx512, arg) X(avx2, arg) X(generic, arg)
