/* kernel_list.h - the kernel table: one line per kernel, in the order the
 * tools list them:
 *
 *     NS_KERNEL(name, "description", .property = value, ...)
 *
 * name is also the kernel's file, kernels/<name>.c, which defines
 * NS__OPS(<name>) (kernel.h): its ops, and nothing else the other files
 * see. The build compiles that file once per code path (isa_paths.h), so
 * it must hold no object of its own but static ones. The properties are the
 * fields of struct ns_kernel (nsearch.h), each false or 0 unless named:
 * parallel, uses_table_size, quadratic, domain_memory, stable_order,
 * reference, bound, min_per_thread, radius_levels. Nothing in the tools is
 * decided from a kernel's name, only from these.
 *
 * min_per_thread was measured on uniform (the workload where a second thread
 * pays latest) on a 2-vCPU Zen 4 at commit 80d08c3: the n where 2 threads first beat 1
 * (docs/kernels.md, "Threads at small n"), halved, rounded up. */
NS_KERNEL(naive, "all pairs i<j, serial: the reference every kernel is checked against",
          .quadratic = true, .stable_order = true, .reference = 1)
NS_KERNEL(naive_omp, "all pairs i<j, rows split over OpenMP threads (dynamic schedule)",
          .parallel = true, .quadratic = true, .min_per_thread = 100)
NS_KERNEL(grid_dense, "uniform grid over the bounding box, counting sort, 27-cell query",
          .domain_memory = true, .stable_order = true, .reference = 3)
NS_KERNEL(hash_serial, "spatial hash of cells into a table, counting sort, 27-cell query",
          .uses_table_size = true, .stable_order = true, .reference = 2)
NS_KERNEL(hash_parallel,
          "spatial hash built with atomic counts and a parallel prefix sum, parallel query",
          .parallel = true, .uses_table_size = true, .reference = 4, .min_per_thread = 400)
NS_KERNEL(grid_sorted, "particles sorted into cell order, half stencil, vectorised test, parallel",
          .parallel = true, .stable_order = true, .bound = true, .min_per_thread = 8000,
          .radius_levels = true)
