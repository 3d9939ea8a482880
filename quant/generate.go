package quant

// The amd64 kernels of each arithmetic family are generated from Go by
// the avo program in _asm (its own module); `make vet` fails when running
// it would change a file. docs/DESIGN.md, "Where to add a kernel", says
// how to add one.
//
//go:generate go run -C _asm . -family avx2i8 -out ../avx2i8_amd64.s -stubs ../avx2i8_amd64.go
//go:generate go run -C _asm . -family float -out ../float_amd64.s -stubs ../float_amd64.go
//go:generate go run -C _asm . -family exp -out ../exp_amd64.s -stubs ../exp_amd64.go
//go:generate go run -C _asm . -family encode -out ../encode_amd64.s -stubs ../encode_stubs_amd64.go
//go:generate go run -C _asm . -family vnni -out ../vnni_amd64.s -stubs ../vnni_amd64.go
//go:generate go run -C _asm . -family kv -out ../kv_amd64.s -stubs ../kv_amd64.go
