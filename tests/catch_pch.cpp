// Carrier of the precompiled Catch2 header every test program reuses (tests/CMakeLists.txt): an
// executable, so that it compiles with the test programs' flags (-fPIE, which gcc checks in a PCH).
int main() { return 0; }
