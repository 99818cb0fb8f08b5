# cases.cmake: libcastor's tests beyond the cmocka ones: the installed header and pkg-config file
# used by a program built outside the tree.
