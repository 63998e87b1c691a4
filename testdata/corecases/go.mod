module switchback/corecases

go 1.19
