/* kernel_list.h - the kernel table: one line per kernel, in the order the
 * tools list them. NS_KERNEL(name, description, parallel, uses_table_size,
 * quadratic, domain_memory, stable_order, reference, bound, min_per_thread,
 * radius_levels), the fields of struct ns_kernel (nsearch.h); the kernel's
 * file kernels/<name>.c defines NS__OPS(<name>),
 * its ops on each code path it is compiled for (kernel.h). min_per_thread was measured on
 * uniform (the workload where a second thread pays latest) on a 2-vCPU Zen 4: the n where
 * 2 threads first beat 1 (docs/kernels.md, "Threads at small n"), halved, rounded up. */
NS_KERNEL(naive, "all pairs i<j, serial: the reference every kernel is checked against", false,
          false, true, false, true, 1, false, 0, false)
NS_KERNEL(naive_omp, "all pairs i<j, rows split over OpenMP threads (dynamic schedule)", true,
          false, true, false, false, 0, false, 100, false)
NS_KERNEL(grid_dense, "uniform grid over the bounding box, counting sort, 27-cell query", false,
          false, false, true, true, 3, false, 0, false)
NS_KERNEL(hash_serial, "spatial hash of cells into a table, counting sort, 27-cell query", false,
          true, false, false, true, 2, false, 0, false)
NS_KERNEL(hash_parallel,
          "spatial hash built with atomic counts and a parallel prefix sum, parallel query", true,
          true, false, false, false, 4, false, 400, false)
NS_KERNEL(grid_sorted, "particles sorted into cell order, half stencil, vectorised test, parallel",
          true, false, false, false, true, 0, true, 8000, true)
