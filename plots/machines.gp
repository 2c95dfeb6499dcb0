# machines - the same kernels on each machine (several result files).
name = "machines"
load plots.'/common.gp'
set title titled(sprintf("Machines side by side: time per search at n = %d (%s)", machines_n, headline))
set ylabel "time per search, ms (median; bars: 95% interval)"
set logscale y
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill pattern border -1
set xtics noenhanced rotate by -30 left
set key outside bottom center horizontal
# columns: label, then (time, low, high) per machine
plot for [m=1:machines_count] data.'/machines.dat' index 0 \
         using (column(3*m-1)):(column(3*m)):(column(3*m+1)):xtic(1) \
         title value(sprintf("machine_%d", m)) ls m fs pattern m%8
