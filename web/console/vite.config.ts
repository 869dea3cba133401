// Built at build time by CMake (web/CMakeLists.txt); the output is embedded in the ferry binary
// and served under /ui/, so every asset URL is relative to that prefix.
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

export default defineConfig({
  base: "/ui/",
  plugins: [react()],
  build: {
    outDir: process.env.FERRY_CONSOLE_OUT || "dist",
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 1024,
    assetsInlineLimit: 0,
  },
});
