# sim_anim - an animated GIF of the frames `nsearch sim --output-dir DIR` wrote:
#
#   gnuplot -e "dir='FRAMES_DIR'; out='OUT.gif'; dt=0.01; pngdir=''" plots/sim_anim.gp
#
#   dir     the folder of frame-NNNNNN.csv (x,y,z,r) and box.csv
#           (lo_x,lo_y,lo_z,hi_x,hi_y,hi_z)
#   out     the GIF to write
#   dt      seconds per simulation frame (nsearch sim --dt; default 0.01), for the
#           time in the title: t = frame * dt
#   pngdir  when not empty, also each frame as pngdir/frame-NNNNNN.png (pngcairo)
#
# A side view: x across, z (gravity's axis) up, seen from -y, each sphere a
# filled circle of its true radius on equal axes, coloured by its height on a
# fixed scale (the box's z range, the same in every frame), drawn from the far
# side (largest y) to the near side so that nearer spheres cover farther ones.
if (!exists("dir") || !exists("out")) {
    print "usage: gnuplot -e \"dir='FRAMES_DIR'; out='OUT.gif'; dt=0.01; pngdir=''\" plots/sim_anim.gp"
    exit status 2
}
if (!exists("dt")) dt = 0.01
if (!exists("pngdir")) pngdir = ""

# The frames in order (ls -v: numeric order, should the numbers outgrow 6 digits).
names = system(sprintf("cd '%s' 2>/dev/null && ls -v frame-*.csv 2>/dev/null", dir))
frames = words(names)
if (frames == 0) {
    print sprintf("sim_anim.gp: no frame-*.csv in '%s'", dir)
    exit status 1
}
box = system(sprintf("sed -n 2p '%s/box.csv' 2>/dev/null | tr ',' ' '", dir))
if (words(box) != 6) {
    print sprintf("sim_anim.gp: '%s/box.csv' lacks a line of six numbers", dir)
    exit status 1
}
lox = real(word(box, 1)); loz = real(word(box, 3))
hix = real(word(box, 4)); hiz = real(word(box, 6))
# the ranges: the box and a little room around it, so that its outline shows
pad = 0.02 * ((hix - lox) > (hiz - loz) ? hix - lox : hiz - loz)
width_x = hix - lox + 2 * pad
height_z = hiz - loz + 2 * pad

# The picture's size: the box on equal axes as large as fits in 800 x 720
# pixels, with fixed margins (pixels) for the tics, the title and the colour box.
ml = 62; mr = 100; mt = 40; mb = 44
scale = (800.0 - ml - mr) / width_x
scale = (720.0 - mt - mb) / height_z < scale ? (720.0 - mt - mb) / height_z : scale
plot_w = width_x * scale
plot_h = height_z * scale
size_w = int(plot_w + ml + mr + 0.5)
size_h = int(plot_h + mt + mb + 0.5)
size_w = size_w < 360 ? 360 : size_w
size_h = size_h < 240 ? 240 : size_h
set lmargin at screen ml / (size_w * 1.0)
set rmargin at screen (ml + plot_w) / size_w
set bmargin at screen mb / (size_h * 1.0)
set tmargin at screen (mb + plot_h) / size_h
set colorbox user origin screen (ml + plot_w + 14) / size_w, screen mb / (size_h * 1.0) \
    size screen 12.0 / size_w, screen plot_h / size_h

set datafile separator comma
set size ratio -1
set xrange [lox - pad:hix + pad]
set yrange [loz - pad:hiz + pad]
set cbrange [loz:hiz]
set border lw 1 lc rgb "#666666"
set object 1 rectangle from lox, loz to hix, hiz front fillstyle empty border lc rgb "#000000" lw 2
set tics out nomirror scale 0.6 textcolor rgb "#000000"
set xlabel "x" offset 0, 0.6
set ylabel "z" offset 1.5, 0
set cblabel "height z" offset -0.5, 0
# Dark at the bottom to bright at the top: viridis's colours, spread as the
# square of the height fraction (stops at 0, 1/64, 1/16, 9/64, ... 1) so that a
# pile settled in the bottom tenth of a tall box still spans several colours; the
# colour box shows the mapping. A fixed number of colours keeps the GIF small.
set palette defined (0 "#440154", 1 "#46327e", 4 "#365c8d", 9 "#277f8e", 16 "#1fa187", \
                     25 "#4ac16d", 36 "#a0da39", 49 "#fde725")
set palette maxcolors 64
set style fill solid 1.0 border lc rgb "#202020"
# the title's time with as many decimals as dt has
decimals = dt > 0 ? ceil(-log10(dt) - 1e-9) : 2
decimals = decimals < 0 ? 0 : decimals
tfmt = sprintf("frame %%d, t = %%.%df s, %%d particles", decimals)

do for [pass=1:2] {
    if (pass == 1) {
        set terminal gif animate delay 5 loop 0 optimize size size_w, size_h \
            font "DejaVuSans,9" background "#ffffff"
        set output out
    } else {
        if (pngdir ne "") {
            system(sprintf("mkdir -p '%s'", pngdir))
            set terminal pngcairo size size_w, size_h font "DejaVu Sans,9" background "#ffffff"
        }
    }
    do for [i=1:(pass == 1 || pngdir ne "" ? frames : 0)] {
        name = word(names, i)
        file = dir . '/' . name
        if (pass == 2) {
            set output sprintf("%s/%s.png", pngdir, name[1:strlen(name) - 4])
        }
        # frame-NNNNNN.csv's number, leading zeros dropped (gnuplot reads 000048
        # as a bad octal number)
        digits = name[7:strlen(name) - 4]
        while (strlen(digits) > 1 && digits[1:1] eq "0") { digits = digits[2:] }
        frame = int(digits)
        count = int(system(sprintf("tail -n +2 '%s' | grep -c .", file)))
        set title sprintf(tfmt, frame, frame * dt, count)
        # sorted by y, largest first: the far spheres first, the near ones over them
        plot sprintf("< tail -n +2 '%s' | sort -t, -k2,2gr", file) \
                 using 1:3:4:3 with circles lc palette notitle
    }
    set output
}
