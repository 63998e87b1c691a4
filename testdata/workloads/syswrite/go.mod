module switchback/syswrite

go 1.19
