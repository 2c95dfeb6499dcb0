# workloads - every kernel on every workload at the largest common n, and the
# index memory per particle (where the dense grid pays for empty space).
name = "workloads"
load plots.'/common.gp'
if (fmt eq "svg") {
    set terminal svg size 1000,900 dynamic enhanced font "Helvetica,14" background "white"
} else {
    set terminal pngcairo size 1000,900 enhanced font "Helvetica,14" background "white"
}
set output sprintf("%s/%s.%s", out, name, fmt)
W = words(workloads)
set multiplot layout 2,1 title titled(sprintf("Workloads at n = %d", workloads_n))
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill pattern border -1
set xtics noenhanced rotate by -20 left font ",12"
set key outside right top
set ylabel "time per search, ms (bars: 95% interval)"
set logscale y
# columns: label, then (time, low, high) per workload, then bytes per particle per workload
plot for [w=1:W] data.'/workloads.dat' index 0 \
         using (column(3*w-1)):(column(3*w)):(column(3*w+1)):xtic(1) \
         title word(workloads, w) ls w fs pattern w%8
set style histogram clustered gap 1
set ylabel "index memory, bytes per particle"
plot for [w=1:W] data.'/workloads.dat' index 0 using (column(1+3*W+w)):xtic(1) \
         title word(workloads, w) ls w fs pattern w%8
unset multiplot
