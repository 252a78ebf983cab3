// Placeholder translation unit so the target exists before its kernels do.
namespace gcnpart::kernels {
int kernels_abi_version() { return 1; }
}  // namespace gcnpart::kernels
