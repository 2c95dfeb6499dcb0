# machines - the same kernels on each machine (several result files).
name = "machines"
load plots.'/common.gp'
set title titled(sprintf("Machines side by side: time per search at n = %d (uniform)", machines_n))
set ylabel "time per search, ms (median)"
set logscale y
set style data histograms
set style histogram clustered gap 1
set style fill pattern border -1
set xtics noenhanced rotate by -30 left
set key outside bottom center horizontal
plot for [m=1:machines_count] data.'/machines.dat' index 0 using (column(1+m)):xtic(1) \
         title value(sprintf("machine_%d", m)) ls m fs pattern m%8
