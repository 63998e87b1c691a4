module switchback/democgo

go 1.19
