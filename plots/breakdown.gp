# breakdown - build vs query time per kernel at the largest n all share
# (log scale: the build is often a small fraction).
name = "breakdown"
load plots.'/common.gp'
set title titled(sprintf("Build and query time at n = %d (%s)", breakdown_n, headline))
set ylabel "time per search, ms (log scale; bars: 95% interval)"
set logscale y
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill pattern border -1
set xtics noenhanced rotate by -30 left
set key inside right top
plot data.'/breakdown.dat' index 0 using 2:3:4:xtic(1) title "build" ls 1 fs pattern 4, \
     '' index 0 using 5:6:7 title "query" ls 2 fs pattern 2
