# common.gp - settings every figure shares. The caller sets:
#   data  the folder of results.py plotdata's files (and meta.gp)
#   out   the folder for the figures
#   fmt   png or svg
#   name  the figure's name (the file is out/name.fmt)
load data.'/meta.gp'
if (fmt eq "svg") {
    set terminal svg size 1000,650 dynamic enhanced font "Helvetica,14" background "white"
} else {
    set terminal pngcairo size 1000,650 enhanced font "Helvetica,14" background "white"
}
set output sprintf("%s/%s.%s", out, name, fmt)
set encoding utf8
set grid xtics ytics mxtics mytics lc rgb "#dddddd" lw 1
set key outside right top vertical box opaque samplen 2 spacing 1.0 font ",12" noenhanced
set border lw 1.2
# Lines readable in black and white: each differs in colour, dash and point.
array colours[8] = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#000000"]
do for [i=1:16] {
    dash = (i-1)%5+1
    point = (i-1)%7*2+4
    set style line i lw 2 lc rgb colours[(i-1)%8+1] dt dash pt point ps 1.3
}
set style line 100 lw 1.5 lc rgb "#555555" dt 2
set style line 101 lw 1.5 lc rgb "#555555" dt 4
# The title, with the machine and date in a smaller second line.
titled(t) = sprintf("%s\n{/*0.75 %s}", t, subtitle)
